"""The install side of bundles, piece by piece: opening one, the engine a machine gets from what a bundle carries,
the setup finding the bundle beside itself, WinSW from a bundle, the manifest pair's own checks.

The whole path (create → verify → offline install → tamper) runs in ``test_bundle_e2e.py``; here each decision is
checked on its own, with hardware recorded from real machines where the machine matters.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from bootstrap.app.setup_main import with_bundle_beside
from bootstrap.catalog import bundle_manifest
from bootstrap.catalog.bundle_manifest import BundleFile, Manifest
from bootstrap.catalog.engine_pins import parse_pins
from bootstrap.catalog.models import load_catalog
from bootstrap.core import settings
from bootstrap.core.errors import IntegrityError, UnsupportedMachine, UsageError
from bootstrap.core.file_formats import tomllib
from bootstrap.core.home import Home
from bootstrap.detect.hardware import load_profile
from bootstrap.install.from_bundle import commit_records, open_bundle
from bootstrap.place.engine import fetch_winsw
from bootstrap.plan.model_facts import catalog_candidates
from bootstrap.plan.planner import choose
from tests.support.bundle_files import model_bundle
from tests.support.paths import REPO_ROOT, TEST_DATA

HARDWARE = TEST_DATA / "hardware"
REPO = "qwenkit-test/tiny-GGUF"
DATA = b"GGUF" + bytes(range(256)) * 64


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _small_model() -> list:
    entry = load_catalog(REPO_ROOT / "payload" / "catalog.toml").model("qwen3.5-4b")
    return catalog_candidates(entry, None, None, None)


@pytest.mark.parametrize(("machine", "carried", "expected"), [
    ("rtx4060_8gb_16gb", {"win-cuda-13", "win-cuda-12.4"}, "win-cuda-13"),  # what it selects, when carried
    ("rtx4060_8gb_16gb", {"win-cuda-12.4", "win-cpu"}, "win-cuda-12.4"),  # driver 591 runs the 12.4 build
    ("rtx4060_8gb_16gb", {"win-cpu"}, "win-cpu"),
    ("rtx3060_12gb", {"ubuntu-x64"}, "ubuntu-x64"),  # no Vulkan build carried: the CPU one
    ("no_gpu_16gb", {"win-cuda-12.4", "win-cpu"}, "win-cpu"),
])
def test_a_machine_gets_the_best_engine_the_bundle_carries(machine: str, carried: set[str], expected: str) -> None:
    plan = choose(_small_model(), load_profile(HARDWARE / f"{machine}.json"), variants=carried)
    assert plan.variant.name == expected
    if expected != "win-cuda-13" and machine == "rtx4060_8gb_16gb":
        assert "The bundle has no win-cuda-13 engine" in plan.variant.reason


def test_a_bundle_for_another_platform_says_which_to_make() -> None:
    with pytest.raises(UnsupportedMachine) as caught:
        choose(_small_model(), load_profile(HARDWARE / "rtx4060_8gb_16gb.json"), variants={"ubuntu-x64"})
    assert "win-cuda-13" in caught.value.message and "--platform windows-x64" in (caught.value.hint or "")
    with pytest.raises(UnsupportedMachine):  # an old driver needs Vulkan or the CPU build: CUDA builds do not help
        choose(_small_model(), load_profile(HARDWARE / "rtx3070_8gb_32gb.json"), variants={"win-cuda-12.4"})


def test_the_setup_installs_from_the_bundle_it_sits_in(tmp_path: Path) -> None:
    assert with_bundle_beside(["install"], tmp_path) == ["install"]  # no bundle here
    model_bundle(tmp_path, REPO, [("m.gguf", DATA)])
    assert with_bundle_beside(["install"], tmp_path) == ["install", "--bundle", str(tmp_path)]
    assert with_bundle_beside(["install", "--yes"], tmp_path)[-2:] == ["--bundle", str(tmp_path)]
    for named in (["install", "--source", "hf"], ["install", "--bundle=http://x/"], ["doctor"]):
        assert with_bundle_beside(named, tmp_path) == named  # the user's choice (or another command) stands


def test_open_refuses_a_folder_that_is_no_bundle_and_an_interrupted_copy(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    with pytest.raises(UsageError) as caught:
        open_bundle(str(tmp_path / "empty"), home)
    assert "not a bundle" in caught.value.message
    root = tmp_path / "usb"
    manifest = model_bundle(root, REPO, [("a.gguf", DATA), ("b.gguf", DATA + b"x")])
    (root / manifest.files[1].path).write_bytes(DATA)  # cut short
    with pytest.raises(IntegrityError) as short:
        open_bundle(str(root), home)
    assert "b.gguf" in short.value.message and not home.bundle_dir.exists()
    (root / manifest.files[1].path).write_bytes(DATA + b"x")
    (root / "payload" / "stray.bin").write_bytes(b"?")
    with pytest.raises(IntegrityError, match=r"stray\.bin"):
        open_bundle(str(root), home)


def _catalog_and_pins_bundle(root: Path, winsw: bytes) -> Manifest:
    """A bundle whose manifest carries a catalog and pins (with WinSW) the way ``bundle create`` writes them."""
    rel = "payload/engines/v2.12.0/WinSW-x64.exe"
    (root / rel).parent.mkdir(parents=True)
    (root / rel).write_bytes(winsw)
    catalog = load_catalog(REPO_ROOT / "payload" / "catalog.toml")
    engines = {"schema": 1, "engine": {"repo": "ggml-org/llama.cpp", "build": 10434, "tag": "b10434"},
               "variants": {"win-cpu": {"assets": [{"name": "llama-b10434-bin-win-cpu-x64.zip", "size": 1,
                                                    "sha256": "0" * 64}]}},
               "winsw": {"repo": "winsw/winsw", "tag": "v2.12.0", "name": "WinSW-x64.exe", "size": len(winsw),
                         "sha256": _sha(winsw)}}
    doc = {"schema": 1, "default_model": catalog.default_model,
           "models": [json.loads(json.dumps(_raw_default_model()))]}
    files = (BundleFile(rel, len(winsw), _sha(winsw), "engine", platform="winsw"),)
    manifest = Manifest("2026-11-30T00:00:00Z", "0", ("windows-x64-cpu",), ("3.12",), (), doc, engines, files)
    bundle_manifest.write(root, manifest)
    return manifest


def _raw_default_model() -> dict:
    path = REPO_ROOT / "payload" / "catalog.toml"
    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    model = next(m for m in doc["models"] if m["id"] == doc["default_model"])
    # A one-model catalog, as a bundle of the default model alone writes it: no fallback or MTP variant named.
    return {**{k: v for k, v in model.items() if k != "mtp_variant"}, "fallbacks": []}


def test_opened_bundle_puts_its_catalog_pins_and_engines_in_force(tmp_path: Path) -> None:
    """Its records land in the home, the variables name them for the run (and are restored after), and WinSW is
    copied from ``payload/engines`` with its hash checked (a changed byte is refused)."""
    winsw = b"MZ" + b"\0" * 1000
    root = tmp_path / "U 盘"
    _catalog_and_pins_bundle(root, winsw)
    home = Home(tmp_path / "home")
    bundle = open_bundle(str(root), home)
    assert bundle is not None and bundle.root == str(root.resolve()) and bundle.variants == {"win-cpu"}
    before = dict(os.environ)
    with settings.overridden(bundle.env()):
        assert load_catalog().default_model == "qwen3.6-35b-a3b"
        assert Path(os.environ["QWENKIT_ENGINES"]).suffix == ".json"
        path = fetch_winsw(home)
        assert path is not None and path.read_bytes() == winsw
        path.unlink()
        (root / "payload/engines/v2.12.0/WinSW-x64.exe").write_bytes(b"MZ" + b"\1" + b"\0" * 999)
        with pytest.raises(IntegrityError):
            fetch_winsw(home)
        assert not path.exists()
    assert dict(os.environ) == before
    assert bundle.folder == home.bundle_pending_dir and not home.bundle_dir.exists()  # not recorded before verified
    commit_records(bundle, home)
    assert parse_pins(json.loads((home.bundle_dir / "engines.json").read_text()), home.bundle_dir).winsw is not None
    assert not home.bundle_pending_dir.exists()
    again = open_bundle(str(root), home)  # the same bundle again: its records are already the home's
    assert again is not None and again.folder == home.bundle_dir


def test_records_in_the_home_answer_when_the_drive_is_gone(tmp_path: Path) -> None:
    root = tmp_path / "usb"
    _catalog_and_pins_bundle(root, b"MZ")
    home = Home(tmp_path / "home")
    opened = open_bundle(str(root), home)
    assert opened is not None
    root.rename(tmp_path / "elsewhere")
    with pytest.raises(UsageError):  # opened, never installed from: nothing was recorded
        open_bundle(str(root), home)
    commit_records(opened, home)  # what a verified install does
    gone = open_bundle(str(root), home)
    assert gone is not None and gone.root is None and "QWENKIT_ENGINE_URL" not in gone.env()
    with pytest.raises(UsageError):  # another folder that is no bundle: the records are not for it
        open_bundle(str(tmp_path / "other"), home)


def test_the_manifest_pair_checks_itself(tmp_path: Path) -> None:
    manifest = model_bundle(tmp_path, REPO, [("m.gguf", DATA)])
    raw = (tmp_path / bundle_manifest.MANIFEST).read_bytes()
    sums = (tmp_path / bundle_manifest.SUMS).read_bytes()
    assert bundle_manifest.parse(raw, sums, "x") == manifest
    assert sums.decode().splitlines()[0] == f"{_sha(raw)}  {bundle_manifest.MANIFEST}"
    with pytest.raises(IntegrityError):  # a listing changed in the manifest only
        bundle_manifest.parse(raw.replace(b'"size": ', b'"size": 1'), sums, "x")
    with pytest.raises(IntegrityError):
        bundle_manifest.parse(raw, None, "x")
    newer = json.loads(raw)
    newer["schema"] = 2
    with pytest.raises(UsageError, match="newer"):
        bundle_manifest.parse(json.dumps(newer).encode(), sums, "x")
    for bad in ("../x", "/etc/passwd", "payload/a\\b", "payload/./x", "payload/a\nb", "C:/x"):
        doc = json.loads(raw)
        doc["files"][0]["path"] = bad
        with pytest.raises(IntegrityError):
            bundle_manifest.parse(json.dumps(doc).encode(), sums, "x")
