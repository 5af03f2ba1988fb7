"""``qwenkit bundle create`` on the loopback hub: a real bundle (tiny chat model + mmproj, the real Gemma 270M, the
test bed's engine as both Linux release assets, the wheelhouse's wheels for linux-x64) checked byte for byte, with
coreutils' ``sha256sum -c``, and by installing its wheels into a fresh venv with no index; a rerun that downloads
nothing and removes what an earlier bundle left; kill -9 mid-download and a rerun that resumes; hard links from
another bundle and from an install home; bad input as one line and exit 2; the fit and FAT32 decisions."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bootstrap.bundle.create import PARTIAL, CreateRequest, CreateResult, create
from bootstrap.bundle.drive import FAT32_MAX_FILE, fits, mount_fstype, too_large_for
from bootstrap.bundle.reuse import RECORD, VerifiedRecord
from bootstrap.bundle.root_files import setup_platform
from bootstrap.bundle.selection import Want, restrict_catalog, restrict_engines
from bootstrap.bundle.wheels import missing_requirements, target_markers
from bootstrap.catalog import bundle_manifest
from bootstrap.catalog.bundle_platforms import PLATFORMS
from bootstrap.catalog.engine_pins import parse_pins
from bootstrap.catalog.models import parse_catalog
from bootstrap.core.home import Home
from bootstrap.fetch.partial import resumable_bytes
from bootstrap.record.state import EngineRecord, FileRecord, InstallState, ServerRecord, save_state
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import ENGINE_TAG, serve_engine
from tests.support.tiny_gguf import write_model
from tests.support.wheelhouse import kit_wheel, provide_wheelhouse

pytestmark = pytest.mark.usefixtures("english")

TINY_REPO = "qwenkit-test/tiny-chat-GGUF"
TINY_FILE = "tiny-chat-Q8_0.gguf"
MMPROJ_FILE = "mmproj-tiny-F16.gguf"
GEMMA_REPO = "qwenkit-test/gemma-3-270m-GGUF"
GEMMA_FILE = "gemma-3-270m-Q4_K_M.gguf"
GEMMA_SIZE = 253_113_024
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
ENGINE_NAMES = [f"llama-{ENGINE_TAG}-bin-{v}.tar.gz" for v in ("ubuntu-vulkan-x64", "ubuntu-x64")]
CLI = "import sys\nfrom bootstrap.app import cli\nsys.exit(cli.main(sys.argv[1:]))"

CATALOG = f'''schema = 1
default_model = "tiny-chat"

[[models]]
id = "tiny-chat"
title = "Tiny chat (test)"
architecture = "llama"
default_quant = "Q8_0"
fallbacks = ["gemma-3-270m", "not-bundled"]
repos = [
  {{ hub = "hf", repo = "{TINY_REPO}" }},
  {{ hub = "modelscope", repo = "{TINY_REPO}" }},
]
quants = [
  {{ name = "Q8_0", file = "{TINY_FILE}" }},
  {{ name = "Q4_0", file = "tiny-chat-Q4_0.gguf" }},
]
mmproj = {{ file = "{MMPROJ_FILE}" }}
server_args = ["-c", "512", "-t", "2"]

[[models]]
id = "gemma-3-270m"
title = "Gemma 3 270M (test)"
architecture = "gemma3"
repos = [ {{ hub = "hf", repo = "{GEMMA_REPO}" }} ]
quants = [ {{ name = "Q4_K_M", file = "{GEMMA_FILE}", size = 253113024, sha256_hint = "a5fd3b62…6818" }} ]
server_args = ["--chat-template", "gemma", "-c", "512", "-t", "2"]

[[models]]
id = "not-bundled"
title = "Not bundled"
architecture = "llama"
repos = [ {{ hub = "hf", repo = "qwenkit-test/none" }} ]
quants = [ {{ name = "Q8_0", file = "none.gguf" }} ]
'''


@dataclass
class Bed:
    hub: LoopbackHub
    root: Path
    env: dict[str, str]
    revisions: dict[str, str]

    def apply(self, mp: pytest.MonkeyPatch) -> None:
        for key in [k for k in os.environ if k.startswith("QWENKIT_")]:
            mp.delenv(key)
        for key, value in self.env.items():
            mp.setenv(key, value)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path, gemma_gguf: Path) -> Iterator[Bed]:
    """One hub for the module (the Gemma file is ingested once), serving both models and the engine."""
    root = tmp_path_factory.mktemp("bundle")
    models = root / "models"
    tiny = write_model("llama", models / TINY_FILE)
    mmproj = write_model("llama", models / MMPROJ_FILE, seed=7)
    with LoopbackHub(root / "hub") as hub:
        revisions = {TINY_REPO: hub.create_repo(TINY_REPO, {TINY_FILE: tiny, MMPROJ_FILE: mmproj}),
                     GEMMA_REPO: hub.create_repo(GEMMA_REPO, {GEMMA_FILE: gemma_gguf})}
        catalog = root / "catalog.toml"
        catalog.write_text(CATALOG, encoding="utf-8")
        env = {"QWENKIT_CATALOG": str(catalog), "QWENKIT_HF_ENDPOINT": hub.endpoint,
               "QWENKIT_MODELSCOPE_ENDPOINT": hub.endpoint, "QWENKIT_ENGINE_URL": serve_engine(hub, engine_asset),
               "QWENKIT_WHEELS": str(provide_wheelhouse()), "QWENKIT_HOME": str(root / "empty home"),
               "QWENKIT_LANG": "en", "NO_PROXY": "127.0.0.1,localhost"}
        yield Bed(hub, root, env, revisions)


def make(bed: Bed, out: Path, *models: str, platform: str = "linux-x64", reuse: tuple[Path, ...] = (),
         home: Path | None = None, setups: tuple[Path, ...] = ()) -> CreateResult:
    """``bundle create`` in this process with the bed's environment."""
    with pytest.MonkeyPatch.context() as mp:
        bed.apply(mp)
        return create(CreateRequest(out=out, models=models, platforms=(platform,), pythons=(PY,), reuse=reuse,
                                    home=home, setups=setups))


def qwenkit(bed: Bed, *argv: str, timeout: float = 300, **popen: object) -> subprocess.CompletedProcess[str]:
    """The real entry point (``cli.main``, errors to exit codes) in a child process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("QWENKIT_")}
    env.update(bed.env, PYTHONPATH=str(REPO_ROOT), PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-c", CLI, *argv], env=env, cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def bundle(bed: Bed) -> tuple[Path, CreateResult, float]:
    """Both models (tiny chat first: the default) for linux-x64, made once for the module."""
    out = bed.root / "USB 盘" / "bundle"
    start = time.monotonic()
    result = make(bed, out, "tiny-chat", "gemma-3-270m")
    return out, result, time.monotonic() - start


# ---- the bundle itself --------------------------------------------------------------------------------------------


def test_layout_and_every_entry_matches_its_bytes(bed: Bed, bundle: tuple[Path, CreateResult, float]) -> None:
    out, result, seconds = bundle
    manifest = bundle_manifest.read_dir(out)  # the manifest and SHA256SUMS agree (else IntegrityError)
    assert manifest.files == result.manifest.files
    paths = {f.path: f for f in manifest.files}
    for rel in (f"payload/models/{TINY_REPO}/{TINY_FILE}", f"payload/models/{GEMMA_REPO}/{GEMMA_FILE}",
                *(f"payload/engines/{ENGINE_TAG}/{name}" for name in ENGINE_NAMES)):
        assert rel in paths
    assert paths[f"payload/models/{TINY_REPO}/{MMPROJ_FILE}"].kind == "mmproj"
    assert paths[f"payload/models/{GEMMA_REPO}/{GEMMA_FILE}"].size == GEMMA_SIZE
    assert paths[f"payload/models/{GEMMA_REPO}/{GEMMA_FILE}"].revision == bed.revisions[GEMMA_REPO]
    assert paths[f"payload/engines/{ENGINE_TAG}/{ENGINE_NAMES[0]}"].platform == "ubuntu-vulkan-x64"
    assert paths["README.txt"].kind == "doc"
    for entry in manifest.files:
        real = out.joinpath(*entry.path.split("/"))
        assert (real.stat().st_size, sha256_of(real)) == (entry.size, entry.sha256), entry.path
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert on_disk - set(paths) == {bundle_manifest.MANIFEST, bundle_manifest.SUMS}
    assert not (out / PARTIAL).exists()  # the work folder is gone: a copy of the folder carries only the bundle
    assert manifest.models == ("tiny-chat:Q8_0", "gemma-3-270m:Q4_K_M")
    assert manifest.platforms == ("linux-x64",) and manifest.python_versions == (PY,)
    assert result.total_bytes == sum(f.size for f in manifest.files)
    assert result.downloaded_bytes == sum(f.size for f in manifest.of_kind("model", "mmproj", "engine"))
    print(f"\nbundle: {len(manifest.files)} files, {result.total_bytes} bytes "
          f"(models {sum(f.size for f in manifest.of_kind('model', 'mmproj'))}, "
          f"engines {sum(f.size for f in manifest.of_kind('engine'))}, "
          f"wheels {sum(f.size for f in manifest.of_kind('wheel'))} in {len(manifest.of_kind('wheel'))}), "
          f"made in {seconds:.1f} s")


def test_sha256sum_checks_the_bundle(bundle: tuple[Path, CreateResult, float]) -> None:
    out = bundle[0]
    proc = subprocess.run(["sha256sum", "-c", "--strict", "payload/SHA256SUMS"], cwd=out, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": OK") == len(bundle[1].manifest.files) + 1  # every file and the manifest


def test_catalog_and_engine_pins_describe_exactly_the_bundle(bed: Bed,
                                                             bundle: tuple[Path, CreateResult, float]) -> None:
    out, result, _ = bundle
    manifest = result.manifest
    by_path = manifest.by_path()
    catalog = parse_catalog(manifest.catalog, out / bundle_manifest.MANIFEST)
    assert catalog.default_model == "tiny-chat" and [m.id for m in catalog.models] == ["tiny-chat", "gemma-3-270m"]
    tiny = catalog.model("tiny-chat")
    assert [q.name for q in tiny.quants] == ["Q8_0"] and tiny.fallbacks == ("gemma-3-270m",)
    model_entry = by_path[f"payload/models/{TINY_REPO}/{TINY_FILE}"]
    assert (tiny.quant("Q8_0").file.sha256, tiny.quant("Q8_0").file.size) == (model_entry.sha256, model_entry.size)
    assert tiny.quant("Q8_0").file.size_exact and tiny.mmproj is not None and tiny.mmproj.sha256 is not None
    assert {(r.hub, r.revision) for r in tiny.repos} == {("hf", bed.revisions[TINY_REPO]),
                                                         ("modelscope", bed.revisions[TINY_REPO])}
    gemma = catalog.model("gemma-3-270m")
    assert gemma.server_args == ("--chat-template", "gemma", "-c", "512", "-t", "2")
    assert gemma.quant(None).file.sha256 == by_path[f"payload/models/{GEMMA_REPO}/{GEMMA_FILE}"].sha256

    pins = parse_pins(manifest.engines, out / bundle_manifest.MANIFEST)
    assert set(pins.assets) == {"ubuntu-vulkan-x64", "ubuntu-x64"} and pins.winsw is None  # no Windows bundled
    for variant, assets in pins.assets.items():
        for asset in assets:
            entry = by_path[f"payload/engines/{asset.tag}/{asset.name}"]
            assert (asset.sha256, asset.size) == (entry.sha256, entry.size), variant


def test_wheels_install_a_venv_with_no_index(bundle: tuple[Path, CreateResult, float], tmp_path: Path) -> None:
    out, result, _ = bundle
    wheels = out / "payload" / "wheels" / "linux-x64"
    names = {f.path.rsplit("/", 1)[1] for f in result.manifest.of_kind("wheel")}
    assert {f.platform for f in result.manifest.of_kind("wheel")} == {"linux-x64"}
    assert any(n.startswith("openai-") for n in names) and any(n.startswith("qwenclientkit-") for n in names)
    # Portable tags only: nothing newer than glibc 2.28 (the host wheelhouse also holds cryptography 2_34).
    assert not [n for n in names if "manylinux_2_3" in n]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    kit = next(wheels.glob("qwenclientkit-*.whl"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": os.devnull}
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index", "--no-compile",
                           "--disable-pip-version-check", "--find-links", str(wheels), "-r",
                           str(REPO_ROOT / "payload" / "requirements.txt"), str(kit)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    check = subprocess.run([str(venv / "bin" / "python"), "-c", "import openai, bootstrap; print(openai.__version__)"],
                           capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path)
    assert check.returncode == 0 and check.stdout.strip() == "2.54.0", check.stderr


# ---- reruns -------------------------------------------------------------------------------------------------------


def test_rerun_downloads_nothing_and_removes_leftovers(bed: Bed, bundle: tuple[Path, CreateResult, float],
                                                       tmp_path: Path) -> None:
    out, first, _ = bundle
    stale = out / "payload" / "models" / "old" / "old.gguf"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"from an earlier bundle")
    outside = tmp_path / "keep-me.txt"
    outside.write_text("not the bundle's")
    (out / "payload" / "engines" / "a-link").symlink_to(tmp_path)
    bed.hub.wait_idle()
    bed.hub.clear_log()
    start = time.monotonic()
    again = make(bed, out, "tiny-chat", "gemma-3-270m")
    seconds = time.monotonic() - start
    bed.hub.wait_idle()
    assert bed.hub.bytes_served() == 0 and again.downloaded_bytes == 0
    assert again.manifest.files == first.manifest.files
    assert not stale.exists() and not stale.parent.exists() and not (out / "payload" / "engines" / "a-link").exists()
    assert outside.read_text() == "not the bundle's"
    print(f"\nno-op rerun: {seconds:.1f} s, {len(bed.hub.requests())} metadata requests, 0 bytes")


def test_kill_mid_download_then_rerun_resumes(bed: Bed, tmp_path: Path) -> None:
    out = tmp_path / "killed"
    bed.hub.wait_idle()
    bed.hub.clear_log()
    throttle = bed.hub.inject("throttle", path_glob=GEMMA_FILE, times=None, rate=4 << 20)
    env = {k: v for k, v in os.environ.items() if not k.startswith("QWENKIT_")}
    env.update(bed.env, PYTHONPATH=str(REPO_ROOT), PYTHONUNBUFFERED="1")
    argv = [sys.executable, "-c", CLI, "bundle", "create", "--out", str(out), "gemma-3-270m", "--platform",
            "linux-x64-cpu", "--python", PY]
    sha = bed.hub.sha256_of(GEMMA_REPO, GEMMA_FILE)
    partial = out / PARTIAL
    with subprocess.Popen(argv, env=env, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          stdin=subprocess.DEVNULL) as proc:
        deadline = time.monotonic() + 120
        while resumable_bytes(partial, sha, GEMMA_SIZE) < GEMMA_SIZE // 4 and proc.poll() is None:
            assert time.monotonic() < deadline, "the download never got going"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    assert not (out / bundle_manifest.MANIFEST).exists()  # an unfinished bundle is visibly unfinished
    kept = resumable_bytes(partial, sha, GEMMA_SIZE)
    throttle.remove()
    bed.hub.wait_idle()
    first = bed.hub.bytes_served(GEMMA_FILE)
    bed.hub.clear_log()
    rerun = qwenkit(bed, "bundle", "create", "--out", str(out), "gemma-3-270m", "--platform", "linux-x64-cpu",
                    "--python", PY)
    assert rerun.returncode == 0, rerun.stderr
    assert f"Bundle ready in {out}" in rerun.stdout and "  model: 1 file(s), 241.39 MiB" in rerun.stdout  # output
    bed.hub.wait_idle()
    manifest = bundle_manifest.read_dir(out)
    assert manifest.by_path()[f"payload/models/{GEMMA_REPO}/{GEMMA_FILE}"].sha256 == sha
    assert sha256_of(out / "payload" / "models" / GEMMA_REPO / GEMMA_FILE) == sha
    again = bed.hub.bytes_served(GEMMA_FILE)
    assert again <= GEMMA_SIZE - kept + GEMMA_SIZE // 8  # what was kept is not fetched again (plus in-flight slack)
    served = first + again
    assert served < 1.5 * GEMMA_SIZE
    assert not partial.exists()
    print(f"\nkill -9 after {kept} of {GEMMA_SIZE} bytes; served in all {served} ({served / GEMMA_SIZE:.2f}x)")


# ---- reuse --------------------------------------------------------------------------------------------------------


def test_reuse_from_another_bundle_hard_links(bed: Bed, bundle: tuple[Path, CreateResult, float],
                                              tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = bundle[0]
    out = bed.root / "second"
    setup_exe = tmp_path / "QwenClientKit-Setup.exe"
    setup_exe.write_bytes(b"MZ\x90\x00" + bytes(range(256)) * 64)  # a PE header's first bytes, then filler
    bed.hub.wait_idle()
    bed.hub.clear_log()
    capsys.readouterr()
    result = make(bed, out, "gemma-3-270m", reuse=(source,), setups=(setup_exe, Path(sys.executable)))
    bed.hub.wait_idle()
    assert "no setup program" not in capsys.readouterr().err
    setups = {f.path: f for f in result.manifest.of_kind("setup")}
    assert setups["QwenClientKit-Setup.exe"].platform == "Windows"
    assert setups[Path(sys.executable).name].platform == "Linux"
    assert (out / "QwenClientKit-Setup.exe").read_bytes() == setup_exe.read_bytes()
    assert os.access(out / Path(sys.executable).name, os.X_OK)
    assert bed.hub.bytes_served() == 0 and result.downloaded_bytes == 0
    rel = Path("payload", "models", GEMMA_REPO, GEMMA_FILE)
    assert (out / rel).stat().st_ino == (source / rel).stat().st_ino
    for name in ENGINE_NAMES:  # both names hold the same bytes here: either file may be the one linked
        engine = Path("payload", "engines", ENGINE_TAG, name)
        assert (out / engine).stat().st_ino in {(source / "payload" / "engines" / ENGINE_TAG / n).stat().st_ino
                                               for n in ENGINE_NAMES}
    assert bundle_manifest.read_dir(out).models == ("gemma-3-270m:Q4_K_M",)


def test_reuse_from_an_install_home_hard_links(bed: Bed, bundle: tuple[Path, CreateResult, float]) -> None:
    home = Home(bed.root / "home with model")
    target = home.models_dir / GEMMA_REPO / GEMMA_FILE
    target.parent.mkdir(parents=True)
    src = bundle[0] / "payload" / "models" / GEMMA_REPO / GEMMA_FILE
    target.write_bytes(src.read_bytes())  # its own inode: the link must come from here
    st = target.stat()
    record = FileRecord("model", f"models/{GEMMA_REPO}/{GEMMA_FILE}", st.st_size, sha256_of(target), "hf",
                        bed.revisions[GEMMA_REPO], st.st_mtime_ns, st.st_ino)
    save_state(home, InstallState("Linux", "gemma-3-270m", "Q4_K_M",
                                  EngineRecord(10434, "ubuntu-x64", "engine/x", "engine/x/llama-server", None),
                                  (record,), ServerRecord("127.0.0.1", 8080, "gemma", (), ())))
    out = bed.root / "third"
    bed.hub.wait_idle()
    bed.hub.clear_log()
    result = make(bed, out, "gemma-3-270m", home=home.root)
    bed.hub.wait_idle()
    assert bed.hub.bytes_served("*.gguf") == 0
    assert (out / "payload" / "models" / GEMMA_REPO / GEMMA_FILE).stat().st_ino == st.st_ino
    assert result.reused_bytes >= GEMMA_SIZE

    if importlib.util.find_spec("bootstrap.bundle.verify") is None:
        return
    intact = qwenkit(bed, "bundle", "verify", str(out))
    assert intact.returncode == 0 and "is intact" in intact.stdout, intact.stderr  # the verdict: the output
    with (out / "README.txt").open("ab") as fh:  # a careless edit after the bundle was made
        fh.write(b"edited\n")
    (out / "payload" / "models" / "stray.gguf").write_bytes(b"not listed")
    broken = qwenkit(bed, "bundle", "verify", str(out), "--json")
    assert broken.returncode == 5, broken.stderr
    assert {(p["path"], p["kind"]) for p in json.loads(broken.stdout)["problems"]} == {
        ("README.txt", "size"), ("payload/models/stray.gguf", "extra")}
    assert "README.txt" in broken.stderr and "Traceback" not in broken.stderr


def test_verified_record_spares_a_rerun_the_read_but_not_after_an_edit(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """What a killed run proved is trusted by the next run without a read; a file changed since is hashed again."""
    data = bytes(range(256)) * 4096
    dest = tmp_path / "payload" / "models" / "a.gguf"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(data)
    want = Want("payload/models/a.gguf", "model", len(data), hashlib.sha256(data).hexdigest())
    path = tmp_path / PARTIAL / RECORD
    assert VerifiedRecord(path).trusted(dest, want)
    assert "Checking payload/models/a.gguf" in capsys.readouterr().err  # hashed once, then recorded on disk
    assert VerifiedRecord(path).trusted(dest, want)  # a new run: only the record file carries over
    assert "Checking" not in capsys.readouterr().err
    st = dest.stat()
    dest.write_bytes(data[::-1])  # same size, other bytes
    os.utime(dest, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert not VerifiedRecord(path).trusted(dest, want)
    assert "Checking payload/models/a.gguf" in capsys.readouterr().err


# ---- bad input ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "words"), [
    (["--platform", "amiga-68k"], "unknown platform amiga-68k"),
    ([f"hf:{GEMMA_REPO}/{GEMMA_FILE}"], "not a catalog model"),
    (["./local.gguf"], "not a catalog model"),
    (["tiny-chat:Q2_K"], "Q2_K"),
    (["--python", "2.7"], "unsupported Python version 2.7"),
])
def test_bad_input_is_one_line_and_exit_2(bed: Bed, bundle: tuple[Path, CreateResult, float], argv: list[str],
                                          words: str) -> None:
    out = bundle[0]
    proc = qwenkit(bed, "bundle", "create", "--out", str(out), *argv)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert words in lines[0] and len(lines) <= 2 and "Traceback" not in proc.stderr
    if "catalog" in words:
        assert "QWENKIT_CATALOG" in lines[1]
    assert (out / bundle_manifest.MANIFEST).is_file()  # bad input never unpublishes a good bundle


def test_no_room_is_exit_3_before_any_download(bed: Bed, tmp_path: Path) -> None:
    """A 64 MiB filesystem (tmpfs in a user + mount namespace) cannot hold Gemma: refused before a byte moves."""
    small = tmp_path / "small drive"
    small.mkdir()
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("no user + mount namespace here: " + probe.stderr.decode(errors="replace").strip())
    env = {k: v for k, v in os.environ.items() if not k.startswith("QWENKIT_")}
    env.update(bed.env, PYTHONPATH=str(REPO_ROOT))
    script = 'mount -t tmpfs -o size=64m tmpfs "$1" && shift && exec "$@"'
    bed.hub.wait_idle()
    bed.hub.clear_log()
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script, "sh", str(small), sys.executable, "-c", CLI,
                           "bundle", "create", "--out", str(small / "bundle"), "gemma-3-270m", "--platform",
                           "linux-x64", "--python", PY], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=300, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 3, proc.stderr
    assert "not enough space" in proc.stderr and "Traceback" not in proc.stderr
    bed.hub.wait_idle()
    assert bed.hub.bytes_served() == 0  # no model, engine or wheel byte was fetched
    print("\n" + proc.stderr.strip().splitlines()[-2] + "\n" + proc.stderr.strip().splitlines()[-1])


# ---- pure decisions -----------------------------------------------------------------------------------------------


def test_fit_and_fat32_decisions() -> None:
    assert fits(10, 10) and not fits(11, 10)
    sizes = {"payload/models/a.gguf": FAT32_MAX_FILE, "payload/models/b.gguf": FAT32_MAX_FILE + 1}
    assert too_large_for("vfat", sizes) == ["payload/models/b.gguf"]
    assert too_large_for("msdos", sizes) == ["payload/models/b.gguf"]
    assert too_large_for("FAT32", sizes) == ["payload/models/b.gguf"]  # macOS / Windows spelling
    for fstype in ("exfat", "ntfs", "ext4", "fuseblk", None):
        assert too_large_for(fstype, sizes) == []
    # Mount tables as psutil reports them (recorded on Ubuntu 24.04 with a USB stick).
    mounts = [("/", "ext4"), ("/media/user/USB STICK", "vfat"), ("/media/user/USB STICK2", "exfat"),
              ("/boot/efi", "vfat")]
    assert mount_fstype(Path("/media/user/USB STICK/bundle"), mounts) == "vfat"
    assert mount_fstype(Path("/media/user/USB STICK2/bundle"), mounts) == "exfat"
    assert mount_fstype(Path("/home/user/bundle"), mounts) == "ext4"


def test_setup_platform_from_real_headers(tmp_path: Path) -> None:
    with open(os.path.realpath(sys.executable), "rb") as fh:
        assert setup_platform(fh.read(4)) == "Linux"
    assert setup_platform(b"MZ\x90\x00") == "Windows"  # every PE file starts with the DOS header
    assert setup_platform(bytes.fromhex("cffaedfe")) == "Darwin"  # 64-bit Mach-O, little-endian
    assert setup_platform(b"#!/b") is None


def test_restricted_catalog_keeps_a_bundled_default_quant() -> None:
    doc = {"schema": 1, "default_model": "big", "models": [
        {"id": "big", "architecture": "llama", "default_quant": "Q8_0", "repos": [{"hub": "hf", "repo": "a/b"}],
         "quants": [{"name": "Q8_0", "file": "q8.gguf"}, {"name": "Q4", "file": "q4.gguf"}]},
        {"id": "small", "architecture": "llama", "repos": [{"hub": "modelscope", "repo": "a/c"}],
         "quants": [{"name": "Q4", "file": "s.gguf"}], "fallbacks": ["big"]}]}
    out = restrict_catalog(doc, [("small", ["Q4"]), ("big", ["Q4"])],
                           {("big", "q4.gguf"): (5, "a" * 64), ("small", "s.gguf"): (6, "b" * 64)},
                           {("modelscope", "a/c"): "c" * 40})
    catalog = parse_catalog(out, Path("bundle"))
    assert catalog.default_model == "small"
    assert catalog.model("big").default_quant == "Q4" and catalog.model("small").fallbacks == ("big",)
    assert catalog.model("small").repos[0].revision == "c" * 40 and catalog.model("big").repos[0].revision is None
    assert doc["models"][0]["quants"][1] == {"name": "Q4", "file": "q4.gguf"}  # the input is left alone


def test_restricted_catalog_drops_an_mtp_variant_left_out() -> None:
    """A bundle of the default model alone must still parse: its ``mtp_variant`` names a model not carried."""
    doc = {"schema": 1, "default_model": "base", "models": [
        {"id": "base", "architecture": "qwen35moe", "repos": [{"hub": "hf", "repo": "a/b"}],
         "quants": [{"name": "Q4", "file": "q4.gguf"}], "mtp_variant": "base-mtp"},
        {"id": "base-mtp", "architecture": "qwen35moe", "repos": [{"hub": "hf", "repo": "a/b-mtp"}],
         "quants": [{"name": "Q4", "file": "q4.gguf"}]}]}
    facts = {("base", "q4.gguf"): (5, "a" * 64), ("base-mtp", "q4.gguf"): (6, "b" * 64)}
    alone = parse_catalog(restrict_catalog(doc, [("base", ["Q4"])], facts, {}), Path("bundle"))
    assert alone.model("base").mtp_variant is None
    both = parse_catalog(restrict_catalog(doc, [("base", ["Q4"]), ("base-mtp", ["Q4"])], facts, {}), Path("b"))
    assert both.model("base").mtp_variant == "base-mtp"


def test_wheel_markers_are_evaluated_for_the_target(tmp_path: Path) -> None:
    """pip evaluates markers for this machine; tqdm needs colorama on Windows only (real wheel METADATA)."""
    wheelhouse = provide_wheelhouse()
    tqdm = sorted(wheelhouse.glob("tqdm-*.whl"))
    assert tqdm
    windows = target_markers(PLATFORMS["windows-x64"], "3.11")
    linux = target_markers(PLATFORMS["linux-x64"], "3.11")
    assert [r.split(">")[0].split("=")[0] for r in missing_requirements(tqdm, windows)] == ["colorama"]
    assert missing_requirements(tqdm, linux) == []
    assert missing_requirements(sorted(wheelhouse.glob("*.whl")), linux) == []


def test_pip_failure_is_exit_4_with_pips_reason(bed: Bed, tmp_path: Path) -> None:
    empty = tmp_path / "no wheels"
    empty.mkdir()
    shutil.copy(kit_wheel(provide_wheelhouse()), empty)  # the kit alone: its dependencies are missing
    saved = bed.env["QWENKIT_WHEELS"]
    bed.env["QWENKIT_WHEELS"] = str(empty)
    try:
        proc = qwenkit(bed, "bundle", "create", "--out", str(tmp_path / "b"), "tiny-chat", "--platform",
                       "linux-x64", "--python", PY)
    finally:
        bed.env["QWENKIT_WHEELS"] = saved
    assert proc.returncode == 4, proc.stderr
    first = proc.stderr.strip().splitlines()[-2]
    assert "pip could not fetch" in first and "openai" in first, proc.stderr
    print("\n" + proc.stderr.strip())


def test_restricted_engines_for_windows_pin_every_asset_and_winsw() -> None:
    import tomllib

    raw = tomllib.loads((REPO_ROOT / "payload" / "engines.toml").read_text(encoding="utf-8"))
    variants = PLATFORMS["windows-x64"].variants
    names = [a["name"] for v in variants for a in raw["variants"][v]["assets"]] + [raw["winsw"]["name"]]
    facts = {name: (1000 + i, f"{i:064x}") for i, name in enumerate(names)}
    pins = parse_pins(restrict_engines(raw, variants, facts, winsw=True), Path("bundle"))
    assert set(pins.assets) == set(variants)
    assert all(a.sha256 == facts[a.name][1] and a.size == facts[a.name][0]
               for assets in pins.assets.values() for a in assets)
    assert pins.winsw is not None and pins.winsw.sha256 == facts["WinSW-x64.exe"][1]
    assert parse_pins(restrict_engines(raw, ("ubuntu-x64",), facts | {"llama-b10434-bin-ubuntu-x64.tar.gz": (
        5, "f" * 64)}, winsw=False), Path("bundle")).winsw is None

