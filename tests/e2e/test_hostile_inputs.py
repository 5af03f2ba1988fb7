"""Hostile and faulty inputs through the real CLI (issue 17): every input bounded, every OS error mapped, fleet
bundles readable, records never poisoned.

The table (``CASES``) holds one row per input: what is prepared (files, a bundle copy, a mount), the command run
as a user would run it (``python -m bootstrap`` in a subprocess), the exit code of DESIGN.md §2 and the one line
that must say what is wrong. For every row:

- exactly one ``error:`` line (plus at most its ``hint:``), matching the row, with no control character in it
  and no traceback anywhere;
- nothing written outside the home: the row's scratch area (its inputs, the current folder, ``TMPDIR``,
  ``HOME``, and any home the row names that must not come into being) is the same file by file afterwards;
- where the row runs against the module's installed home, that install still serves and its record is unchanged.

The defects the issue lists, and the classes they stand for (FIFO, device, link out of a bundle, nesting,
oversize, control characters, non-loopback host, credentials in URLs), are all rows here; what needs a sequence of
runs (a refused bundle then a rerun with the drive gone, a bundle served by another user, a wildcard host, a key
made readable) has its own test below.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest
import requests

from bootstrap.catalog import bundle_manifest
from bootstrap.core.home import Home
from bootstrap.plan.launch_spec import lan_address
from bootstrap.register.managers import FallbackManager
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.install_bed import MODEL_FILE, MODEL_ID, MODEL_REPO, catalog_text, serve_engine
from tests.support.llama import free_port
from tests.support.mounts import in_tmpfs
from tests.support.tiny_gguf import write_model

PYTHON_VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
DEEP = 100_000  # nesting levels: far past Python's recursion limit
SECRET = "s3cret"


@dataclass
class World:
    """The loopback hub (engine release + the tiny model), its catalog, an installed and serving home, and a
    bundle made by ``bundle create`` for this platform."""

    root: Path
    hub: LoopbackHub
    catalog: Path
    engine_url: str
    wheels: Path
    revision: str
    served: Home
    bundle: Path
    engine_asset: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("QWENKIT_", "LLAMA_ARG_", "HF_", "MODELSCOPE_"))
               and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
        env.update({"QWENKIT_CATALOG": str(self.catalog), "QWENKIT_HF_ENDPOINT": self.hub.endpoint,
                    "QWENKIT_MODELSCOPE_ENDPOINT": self.hub.endpoint, "QWENKIT_ENGINE_URL": self.engine_url,
                    "QWENKIT_WHEELS": str(self.wheels), "QWENKIT_LANG": "en", "NO_COLOR": "1",
                    "NO_PROXY": "127.0.0.1,localhost", "PYTHONPATH": str(REPO_ROOT), "PYTHONUNBUFFERED": "1"})
        env.update(extra)
        return env


def qwenkit(argv: list[str], env: dict[str, str], *, cwd: Path = REPO_ROOT, prefix: tuple[str, ...] = (),
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess; a hang fails the test (``timeout``) instead of the suite."""
    return subprocess.run([*prefix, sys.executable, "-m", "bootstrap", *argv], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, check=False, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, engine_asset: Path, wheelhouse: Path) -> Iterator[World]:
    root = tmp_path_factory.mktemp("hostile")
    tiny = write_model("llama", root / "src" / MODEL_FILE)
    with LoopbackHub(root / "hub") as hub:
        engine_url = serve_engine(hub, engine_asset)
        revision = hub.create_repo(MODEL_REPO, {MODEL_FILE: tiny})
        catalog = root / "catalog.toml"
        catalog.write_text(catalog_text(revision), encoding="utf-8")
        w = World(root, hub, catalog, engine_url, wheelhouse, revision, Home(root / "served home"), root / "bundle",
                  engine_asset)
        try:
            proc = qwenkit(["install", "--yes", "--no-service", "--no-venv", "--port", str(free_port())],
                           w.env(QWENKIT_HOME=str(w.served.root)))
            assert proc.returncode == 0, proc.stderr[-3000:]
            proc = qwenkit(["bundle", "create", "--out", str(w.bundle), MODEL_ID, "--platform", "linux-x64",
                            "--python", PYTHON_VERSION], w.env())
            assert proc.returncode == 0, proc.stderr[-3000:]
            yield w
        finally:
            FallbackManager(w.served).stop()


# ---- helpers ---------------------------------------------------------------------------------------------------


def serving(home: Home) -> bool:
    """The home's server answers ``/health`` at its recorded port."""
    state = json.loads(home.state_file.read_text(encoding="utf-8"))
    try:
        with requests.Session() as session:
            session.trust_env = False
            return session.get(f"http://127.0.0.1:{state['server']['port']}/health", timeout=10).status_code == 200
    except requests.RequestException:
        return False


def snapshot(root: Path, allowed: Path | None = None) -> dict[str, tuple[str, int, int]]:
    """Every entry under ``root`` (links not followed): kind, size, mtime; ``allowed`` (a home) left out."""
    found: dict[str, tuple[str, int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath, name)
            if allowed is not None and (path == allowed or allowed in path.parents):
                continue
            st = path.lstat()
            kind = "dir" if stat.S_ISDIR(st.st_mode) else "link" if stat.S_ISLNK(st.st_mode) else "file"
            found[str(path.relative_to(root))] = (kind, 0 if kind == "dir" else st.st_size, st.st_mtime_ns)
    return found


def error_lines(proc: subprocess.CompletedProcess[str], count: int = 1) -> list[str]:
    """The run's ``count`` ``error:`` lines (``bundle verify`` names each problem on its own line before its
    verdict), checked: consecutive, the last followed by at most its hint, no control character, no traceback."""
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    errors = [i for i, line in enumerate(lines) if line.startswith("error: ")]
    assert len(errors) == count and errors == list(range(errors[0], errors[0] + count)), proc.stderr[-3000:]
    tail = lines[errors[-1] + 1:]
    assert len(tail) <= 1 and all(line.startswith("hint: ") for line in tail), proc.stderr[-3000:]
    for line in lines[errors[0]:]:
        assert not re.search("[\x00-\x1f\x7f]", line), repr(line)
    return [lines[i] for i in errors]


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The run's single ``error:`` line (see ``error_lines``)."""
    return error_lines(proc)[0]


def hardlinked_copy(src: Path, dest: Path) -> Path:
    """A copy of a bundle folder whose files are hard links (cheap; rewrite a file before changing it)."""
    shutil.copytree(src, dest, copy_function=os.link)
    return dest


# ---- the table ---------------------------------------------------------------------------------------------------


@dataclass
class Scratch:
    """A row's own area: inputs it writes, the current folder, TMPDIR and HOME of the run, homes not to create."""

    root: Path

    @property
    def inputs(self) -> Path:
        return self.root / "inputs"

    def fresh_home(self, name: str = "fresh home") -> Path:
        return self.root / name  # must still not exist after the run

    def write(self, name: str, data: str | bytes) -> Path:
        path = self.inputs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
        return path

    def fifo(self, name: str) -> Path:
        path = self.inputs / name
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path)
        return path


@dataclass
class Run:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # on top of the world's (and the row's HOME/TMPDIR)
    prefix: tuple[str, ...] = ()
    served: bool = False  # against the installed home: it must keep serving, its record unchanged
    home: Path | None = None  # a home inside the scratch area the run may write to (its .lock)


Make = Callable[[World, Scratch], Run]


@dataclass(frozen=True)
class Case:
    id: str
    what: str  # the defect number or the class it stands for
    make: Make
    code: int
    message: str  # a regular expression the (first) error line must match
    lines: int = 1  # error lines: bundle verify lists each problem, then its verdict


def served(argv: list[str], **env: str) -> Make:
    """A rerun of ``install`` (or another command) against the installed home."""
    return lambda w, s: Run(argv, env, served=True)


def fresh(argv: list[str], **env: str) -> Make:
    """A command for a home that does not exist yet (and must not exist afterwards)."""
    return lambda w, s: Run([*argv, "--home", str(s.fresh_home())] if argv[0] == "install" else argv,
                            {"QWENKIT_HOME": str(s.fresh_home()), **env})


def _bundle_with(manifest_entry: Callable[[Path], None]) -> Make:
    """``bundle verify`` of a folder whose ``payload/manifest.json`` is made by ``manifest_entry``."""
    def make(w: World, s: Scratch) -> Run:
        root = s.inputs / "bundle"
        (root / "payload").mkdir(parents=True)
        manifest_entry(root / bundle_manifest.MANIFEST)
        (root / bundle_manifest.SUMS).write_text("0" * 64 + "  payload/manifest.json\n", encoding="utf-8")
        return Run(["bundle", "verify", str(root)])
    return make


def _deep_manifest(path: Path) -> None:
    path.write_bytes(("[" * DEEP + "]" * DEEP).encode())


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as fh:
        fh.truncate(size)


def _deep_toml(prefix: str = "") -> str:
    return f"{prefix}a = " + "[" * DEEP + "]" * DEEP + "\n"


def _hardware(w: World, s: Scratch, content: str | None = None, fifo: bool = False) -> Path:
    if fifo:
        return s.fifo("hw.json")
    return s.write("hw.json", content or "")


def _plan_with_catalog(text: Callable[[World], str]) -> Make:
    def make(w: World, s: Scratch) -> Run:
        catalog = s.write("catalog.toml", text(w))
        return Run(["plan", "--hardware", str(REPO_ROOT / "tests/data/hardware/no_gpu_16gb.json")],
                   {"QWENKIT_CATALOG": str(catalog)})
    return make


def _served_with_catalog(text: Callable[[World], str]) -> Make:
    def make(w: World, s: Scratch) -> Run:
        return Run(["install", "--yes", "--no-service", "--no-venv"],
                   {"QWENKIT_CATALOG": str(s.write("catalog.toml", text(w)))}, served=True)
    return make


def _served_with_pins(text: Callable[[], str]) -> Make:
    def make(w: World, s: Scratch) -> Run:
        return Run(["install", "--yes", "--no-service", "--no-venv"],
                   {"QWENKIT_ENGINES": str(s.write("engines.toml", text()))}, served=True)
    return make


def _pins_with_tag(tag: str) -> str:
    text = (REPO_ROOT / "payload" / "engines.toml").read_text(encoding="utf-8")
    return re.sub(r'(?m)^tag = "b\d+"', f'tag = "{tag}"', text, count=1)


def _answers(content: str | bytes | None = None, *, fifo: bool = False, device: bool = False,
             size: int | None = None) -> Make:
    def make(w: World, s: Scratch) -> Run:
        if device:
            path = Path("/dev/zero")
        elif fifo:
            path = s.fifo("answers.toml")
        elif size is not None:
            path = s.write("answers.toml", "")
            _sparse(path, size)
        else:
            assert content is not None
            path = s.write("answers.toml", content)
        return Run(["install", "--answers", str(path)], served=True)
    return make


def _answers_relative_home(w: World, s: Scratch) -> Run:
    """A relative home in an answers file is beside the file: that home's (damaged) record is what gets read; taken
    relative to the current folder it would be an empty home and the unknown model would be the error."""
    answers = s.write("rollout/answers.toml", 'home = "rel-home"\nmodel = "no-such-model"\n')
    home = s.write("rollout/rel-home/state.json", "{").parent
    return Run(["install", "--answers", str(answers)], home=home)


def _status_of_home_with_state(content: Callable[[Path], None]) -> Make:
    def make(w: World, s: Scratch) -> Run:
        home = s.inputs / "home"
        home.mkdir(parents=True)
        content(home / "state.json")
        return Run(["status"], {"QWENKIT_HOME": str(home)})
    return make


def _bundle_copy(w: World, s: Scratch) -> Path:
    return hardlinked_copy(w.bundle, s.inputs / "bundle copy")


def _linked_out(folder: bool) -> Callable[[World, Scratch], Path]:
    """A copy of the bundle whose model (or its repo folder) is a link to the same bytes outside the bundle."""
    def make(w: World, s: Scratch) -> Path:
        root = _bundle_copy(w, s)
        model = root / "payload" / "models" / MODEL_REPO / MODEL_FILE
        outside = s.inputs / "elsewhere" / MODEL_REPO
        outside.mkdir(parents=True)
        shutil.copyfile(model, outside / MODEL_FILE)
        if folder:
            shutil.rmtree(model.parent)
            model.parent.symlink_to(outside, target_is_directory=True)
        else:
            model.unlink()
            model.symlink_to(outside / MODEL_FILE)
        return root
    return make


def _verify_bundle(bundle: Callable[[World, Scratch], Path]) -> Make:
    return lambda w, s: Run(["bundle", "verify", str(bundle(w, s))])


def _install_bundle(bundle: Callable[[World, Scratch], Path]) -> Make:
    return lambda w, s: Run(["install", "--yes", "--no-service", "--no-venv", "--bundle", str(bundle(w, s)),
                             "--home", str(s.fresh_home())])


def _without_engine_for_this_machine(w: World, s: Scratch) -> Path:
    """The bundle with its Linux engines swapped for a Windows one (manifest pair rewritten to match)."""
    root = _bundle_copy(w, s)
    manifest = bundle_manifest.read_dir(root)
    for entry in manifest.of_kind("engine"):
        (root / entry.path).unlink()
    data = b"PK\x05\x06" + b"\0" * 18  # an empty zip: never opened, the plan refuses first
    name = "llama-b10434-bin-win-cpu-x64.zip"
    rel = f"payload/engines/b10434/{name}"
    (root / rel).write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    engines = {**manifest.engines, "variants": {"win-cpu": {"assets": [{"name": name, "size": len(data),
                                                                           "sha256": sha}]}}}
    files = (*(f for f in manifest.files if f.kind != "engine"),
             bundle_manifest.BundleFile(rel, len(data), sha, "engine", platform="win-cpu"))
    for pair in (bundle_manifest.MANIFEST, bundle_manifest.SUMS):
        (root / pair).unlink()  # hard links to the world's bundle: replaced, never rewritten in place
    bundle_manifest.write(root, replace(manifest, engines=engines, files=files, platforms=("windows-x64-cpu",)))
    return root


def _disk_full_while_extracting(w: World, s: Scratch) -> Run:
    """A home on a tmpfs that holds the model and the engine archive but not the extracted engine."""
    mount = s.root / "small disk"
    downloads = w.engine_asset.stat().st_size + (w.root / "src" / MODEL_FILE).stat().st_size
    size_mib = downloads // (1 << 20) + 3  # the downloads and the home's records fit; ~27 MB of engine do not
    return Run(["install", "--yes", "--no-service", "--no-venv", "--home", str(mount / "home")],
               prefix=in_tmpfs(mount, f"size={size_mib}m"))


def _read_only_home(w: World, s: Scratch) -> Run:
    mount = s.root / "read-only disk"
    return Run(["install", "--yes", "--no-service", "--no-venv", "--home", str(mount / "home")],
               prefix=in_tmpfs(mount, "ro,size=1m"))


def _dead_url(path: str) -> str:
    return f"http://alice:{SECRET}@127.0.0.1:{free_port()}/{path}"


def _catalog_with_unknown_key(w: World) -> str:
    return catalog_text(w.revision).replace('title = "', 'colour = "blue"\ntitle = "', 1)


def _catalog_with_non_hex_sha(w: World) -> str:
    return catalog_text(w.revision).replace(f'file = "{MODEL_FILE}"', f'file = "{MODEL_FILE}", sha256 = "{"z" * 64}"')


def _manifest_link_to_dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


CASES = [
    # 3: the manifest of a bundle as a FIFO / a link to /dev/zero: was a hang / MemoryError
    Case("manifest-fifo", "3, FIFO", _bundle_with(os.mkfifo), 5, r"manifest\.json is a FIFO"),
    Case("manifest-link-to-dev-zero", "3, device", _bundle_with(_manifest_link_to_dev_zero), 5,
         r"manifest\.json is a symbolic link"),
    Case("manifest-oversize", "oversize", _bundle_with(lambda p: _sparse(p, 65 << 20)), 5,
         r"larger than 67108864 bytes"),
    # 4: disk full while extracting the engine: was exit 1 "OSError [Errno 28]"
    Case("engine-extraction-disk-full", "4", _disk_full_while_extracting, 3,
         r"not enough free disk space at .*staging.*: \d+ bytes needed"),
    Case("home-read-only", "EROFS", _read_only_home, 3, r"cannot write to .*read-only disk/home: Read-only"),
    # 5: nesting in every document: was exit 1 RecursionError
    Case("deep-manifest", "5, nesting", _bundle_with(_deep_manifest), 5, r"nested more than 32 levels"),
    Case("deep-answers", "5, nesting", _answers(_deep_toml()), 2,
         r"answers file .*: not valid TOML: nested more than 32 levels"),
    Case("deep-catalog", "5, nesting", _plan_with_catalog(lambda w: _deep_toml("schema = 1\n")), 2,
         r"catalog .*: not valid TOML: nested more than 32 levels"),
    Case("deep-pins", "5, nesting", _served_with_pins(lambda: _deep_toml("schema = 1\n")), 2,
         r"engine pins .*: not valid TOML: nested more than 32 levels"),
    Case("deep-hardware", "5, nesting",
         lambda w, s: Run(["plan", "--hardware", str(_hardware(w, s, "[" * DEEP + "]" * DEEP))]), 2,
         r"hardware profile .*: not valid JSON: nested more than 32 levels"),
    Case("deep-state", "5, nesting", _status_of_home_with_state(lambda p: p.write_text("[" * DEEP + "]" * DEEP)), 2,
         r"state\.json is damaged.*nested more than 32 levels"),
    # 6: a home path with a newline: was exit 1 QuotingError after the download
    Case("home-newline", "6, control characters", lambda w, s: Run(
        ["install", "--yes", "--no-service", "--home", str(s.fresh_home("a\nb"))]), 2,
         r"--home holds a control character \('\\n'\)"),
    Case("home-bell", "control characters", lambda w, s: Run(
        ["install", "--yes", "--no-service", "--home", str(s.fresh_home("a\ab"))]), 2,
         r"--home holds a control character \('\\x07'\)"),
    Case("home-name-too-long", "ENAMETOOLONG", lambda w, s: Run(
        ["install", "--yes", "--no-service", "--home", str(s.fresh_home("y" * 300))]), 2, r"path too long"),
    Case("home-under-proc", "ENOENT", lambda w, s: Run(
        ["install", "--yes", "--no-service", "--home", "/proc/qwenkit-hostile-home"]), 2,
         r"cannot use /proc/qwenkit-hostile-home: No such file"),
    # 7: --host not validated: was exit 1 (idna) or 6, after the full download
    Case("host-injection", "7", lambda w, s: Run(
        ["install", "--yes", "--no-service", "--no-venv", "--host", f"127.0.0.1; touch {s.root / 'pwned'}"],
        served=True), 2, r"--host 127\.0\.0\.1; touch .* is neither an IP address nor a valid host name"),
    Case("host-with-space", "7", served(["install", "--yes", "--no-service", "--no-venv", "--host", "bad host"]), 2,
         r"--host bad host is neither"),
    Case("host-newline", "7, control characters",
         served(["install", "--yes", "--no-service", "--no-venv", "--host", "127.0.0.1\nx"]), 2,
         r"--host holds a control character"),
    # 9: a 100,000-character MODEL: was exit 1 ENAMETOOLONG
    Case("model-100k-characters", "9, oversize",
         served(["install", "--yes", "--no-service", "--no-venv", "x" * 100_000]), 2,
         r"MODEL is 100000 characters long; at most 4096"),
    Case("model-control-characters", "minor, control characters",
         lambda w, s: Run(["plan", "bad\x1b[31mred\x07"]), 2,
         r"MODEL holds a control character \('\\x1b'\): bad\\x1b\[31mred\\x07"),
    # 10: a bundle with no engine for this machine: was exit 2
    Case("bundle-without-engine-for-this-machine", "10", _install_bundle(_without_engine_for_this_machine), 3,
         r"the bundle has no engine for this machine \(it needs ubuntu-(vulkan-)?x64; the bundle has win-cpu\)"),
    # 12: credentials in URLs: were printed
    Case("bundle-url-credentials", "12, credentials",
         lambda w, s: Run(["install", "--yes", "--no-service", "--bundle", _dead_url("b/"),
                           "--home", str(s.fresh_home())]), 4, r"cannot reach 127\.0\.0\.1:\d+ .*connection refused"),
    Case("source-url-credentials", "12, credentials",
         lambda w, s: Run(["install", "--yes", "--no-service", "--source", _dead_url("m/"),
                           "--home", str(s.fresh_home())]), 4, r"cannot reach 127\.0\.0\.1:\d+ .*connection refused"),
    Case("verify-url-credentials", "12, credentials", lambda w, s: Run(["bundle", "verify", _dead_url("b/")]), 4,
         r"http://alice:\*\*\*@127\.0\.0\.1:\d+/b/payload/manifest\.json"),
    # 13: a listed bundle file that is a link out of the bundle: was followed
    Case("bundle-file-link-out-verify", "13, link out", _verify_bundle(_linked_out(folder=False)), 5,
         r"not a regular file inside the bundle: payload/models/.*\.gguf", lines=2),
    Case("bundle-file-link-out-install", "13, link out", _install_bundle(_linked_out(folder=False)), 5,
         r"not a regular file inside the bundle: payload/models/.*\.gguf"),
    Case("bundle-folder-link-out-verify", "13, link out", _verify_bundle(_linked_out(folder=True)), 5,
         r"not a regular file inside the bundle: payload/models/.*\.gguf", lines=3),
    # 14: the catalog: unknown keys were ignored, a non-hex sha256 failed only at integrity time (exit 5)
    Case("catalog-unknown-key", "14", _plan_with_catalog(_catalog_with_unknown_key), 2,
         r"unknown key 'models\[0\]\.colour'"),
    Case("catalog-non-hex-sha256", "14", _served_with_catalog(_catalog_with_non_hex_sha), 2,
         r"'models\[0\]\.quants\[0\]\.sha256' must be 64 hex digits"),
    # 15: engine pins with tag = "..": a dot segment in release URLs
    Case("pins-dot-dot-tag", "15", _served_with_pins(lambda: _pins_with_tag("..")), 2,
         r"engine\.tag must be a release tag"),
    # FIFOs, devices, oversize where a file is expected
    Case("answers-fifo", "FIFO", _answers(fifo=True), 2, r"answers file .*answers\.toml is a FIFO"),
    Case("answers-device", "device", _answers(device=True), 2, r"answers file /dev/zero: /dev/zero is a device"),
    Case("answers-oversize", "oversize", _answers(size=2 << 20), 2, r"larger than 1048576 bytes"),
    Case("hardware-fifo", "FIFO", lambda w, s: Run(["plan", "--hardware", str(_hardware(w, s, fifo=True))]), 2,
         r"hardware profile .*hw\.json is a FIFO"),
    Case("hardware-device", "device", lambda w, s: Run(["plan", "--hardware", "/dev/zero"]), 2,
         r"/dev/zero is a device"),
    Case("catalog-fifo", "FIFO", lambda w, s: Run(["plan"], {"QWENKIT_CATALOG": str(s.fifo("catalog.toml"))}), 2,
         r"catalog .*catalog\.toml is a FIFO"),
    Case("catalog-device", "device", lambda w, s: Run(["plan"], {"QWENKIT_CATALOG": "/dev/zero"}), 2,
         r"catalog /dev/zero: /dev/zero is a device"),
    Case("catalog-oversize", "oversize", lambda w, s: Run(["plan"], {"QWENKIT_CATALOG": str(_sparse_input(
        s, "catalog.toml", 17 << 20))}), 2, r"larger than 16777216 bytes"),
    Case("state-fifo", "FIFO", _status_of_home_with_state(os.mkfifo), 2, r"state\.json is damaged.*is a FIFO"),
    # minor: a failed first install left an empty home holding .lock; a relative home in an answers file
    Case("failed-first-install-leaves-no-home", "minor",
         fresh(["install", "--yes", "--no-service", "no-such-model"]), 2, r"Unknown model 'no-such-model'"),
    Case("answers-relative-home", "minor", _answers_relative_home, 2, r"state\.json is damaged"),
    Case("source-newline", "control characters", fresh(["install", "--yes", "--no-service", "--source", "hf\n"]),
         2, r"--source holds a control character"),
]


def _sparse_input(s: Scratch, name: str, size: int) -> Path:
    path = s.write(name, "")
    _sparse(path, size)
    return path


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(world: World, tmp_path: Path, case: Case) -> None:
    scratch = Scratch(tmp_path)
    for folder in ("inputs", "cwd", "tmp", "user-home"):
        (tmp_path / folder).mkdir()
    run = case.make(world, scratch)
    record = world.served.state_file.read_bytes()
    before = snapshot(tmp_path, run.home)
    env = world.env(**{"QWENKIT_HOME": str(world.served.root), "TMPDIR": str(tmp_path / "tmp"),
                       "HOME": str(tmp_path / "user-home"), **run.env})
    proc = qwenkit(run.argv, env, cwd=tmp_path / "cwd", prefix=run.prefix, timeout=300)
    assert proc.returncode == case.code, proc.stderr[-3000:]
    line = error_lines(proc, case.lines)[0]
    assert re.search(case.message, line), line
    assert SECRET not in proc.stdout + proc.stderr
    assert snapshot(tmp_path, run.home) == before  # nothing written outside the home (no home left where none was)
    assert world.served.state_file.read_bytes() == record
    if run.served:
        assert serving(world.served)


# ---- sequences ---------------------------------------------------------------------------------------------------


def test_a_refused_newer_bundle_leaves_the_home_and_its_records_as_they_were(world: World, tmp_path: Path) -> None:
    """Defect 2: a tampered newer bundle is refused (exit 5) and the old server keeps serving; the records of
    the bundle the home came from stay, so a rerun with that drive unplugged is "Up to date" (it was exit 2)."""
    home = Home(tmp_path / "home")
    env = world.env(QWENKIT_HOME=str(home.root))
    good = hardlinked_copy(world.bundle, tmp_path / "usb")
    proc = qwenkit(["install", "--bundle", str(good), "--yes", "--no-service", "--no-venv", "--port",
                    str(free_port())], env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    try:
        records = {p.name: p.read_bytes() for p in home.bundle_dir.iterdir()}
        new_model = write_model("llama", tmp_path / "v2" / MODEL_FILE, seed=11)
        catalog = tmp_path / "catalog-v2.toml"
        catalog.write_text(catalog_text(world.hub.commit(MODEL_REPO, {MODEL_FILE: new_model})), encoding="utf-8")
        newer = tmp_path / "newer"
        proc = qwenkit(["bundle", "create", "--out", str(newer), MODEL_ID, "--platform", "linux-x64", "--python",
                        PYTHON_VERSION, "--reuse", str(good)], world.env(QWENKIT_CATALOG=str(catalog)))
        assert proc.returncode == 0, proc.stderr[-3000:]
        model = newer / "payload" / "models" / MODEL_REPO / MODEL_FILE
        data = bytearray(model.read_bytes())
        data[len(data) // 2] ^= 1
        model.unlink()  # never write through a hard link into another bundle
        model.write_bytes(bytes(data))

        proc = qwenkit(["install", "--bundle", str(newer), "--yes", "--no-service", "--no-venv"], env)
        assert proc.returncode == 5 and "does not match the bundle manifest" in one_error_line(proc)
        assert serving(home)
        assert {p.name: p.read_bytes() for p in home.bundle_dir.iterdir()} == records

        good.rename(tmp_path / "unplugged")
        proc = qwenkit(["install", "--yes", "--no-service", "--no-venv"], env)
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert "Up to date" in proc.stdout and serving(home)
    finally:
        FallbackManager(home).stop()


def _python_for(user: str) -> str | None:
    """An interpreter ``user`` can run (this test's may live under a private home folder)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", shutil.which("python3")):
        if candidate and subprocess.run(["runuser", "-u", user, "--", candidate, "-c", "pass"], capture_output=True,
                                        check=False).returncode == 0:
            return candidate
    return None


def test_a_bundle_served_by_another_user_installs_a_second_home(world: World, tmp_path: Path) -> None:
    """Defect 1: what bundle create writes is readable by others (files 0644, folders 0755), so ``sha256sum -c``
    and ``python -m http.server`` run as ``nobody`` work, and a second machine installs from that server."""
    for entry in bundle_manifest.read_dir(world.bundle).files:
        # what runs on Linux/macOS (a setup, the launchers) is also executable; everything else plain readable
        runs = entry.kind == "setup" and entry.platform != "Windows"
        assert stat.S_IMODE((world.bundle / entry.path).stat().st_mode) == (0o755 if runs else 0o644), entry.path
    for rel in (bundle_manifest.MANIFEST, bundle_manifest.SUMS):
        assert stat.S_IMODE((world.bundle / rel).stat().st_mode) == 0o644, rel
    for folder in [p for p in (world.bundle / "payload").rglob("*") if p.is_dir()]:
        assert stat.S_IMODE(folder.stat().st_mode) == 0o755, folder
    if os.geteuid() != 0 or shutil.which("runuser") is None:
        pytest.skip("serving as another user needs root and runuser")
    python = _python_for("nobody")
    if python is None:
        pytest.skip("no Python interpreter that the user nobody may run")
    served_dir = Path(tempfile.mkdtemp(prefix="qwenkit-served-", dir="/tmp"))  # pytest's folders are 0700
    home = Home(tmp_path / "second machine")
    try:
        served_dir.chmod(0o755)
        root = served_dir / "qwen"
        shutil.copytree(world.bundle, root)  # modes travel with the copy, as with cp -p or rsync -p
        check = subprocess.run(["runuser", "-u", "nobody", "--", "sha256sum", "--quiet", "-c",
                                bundle_manifest.SUMS], cwd=root, capture_output=True, text=True, check=False)
        assert check.returncode == 0, check.stdout + check.stderr
        port = free_port()
        server = subprocess.Popen(["runuser", "-u", "nobody", "--", python, "-m", "http.server", "--bind",
                                   "127.0.0.1", "--directory", str(root), str(port)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_for_port(port)
            proc = qwenkit(["install", "--bundle", f"http://127.0.0.1:{port}/", "--yes", "--no-service",
                            "--no-venv", "--port", str(free_port())], world.env(QWENKIT_HOME=str(home.root)))
            assert proc.returncode == 0, proc.stderr[-3000:]
            assert serving(home)
        finally:
            server.terminate()
            server.wait(timeout=30)
    finally:
        FallbackManager(home).stop()
        shutil.rmtree(served_dir, ignore_errors=True)


def _wait_for_port(port: int) -> None:
    for _ in range(300):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        subprocess.run(["sleep", "0.1"], check=False)
    raise AssertionError(f"nothing listens on {port}")


def test_a_wildcard_host_warns_and_shows_the_address_clients_use(world: World, tmp_path: Path) -> None:
    """Defect 8: ``--host 0.0.0.0`` is a loud warning up front, and the report, the snippets and ``status`` give
    the machine's LAN address (loopback only where it has none), where the server does answer."""
    home = Home(tmp_path / "home")
    port = free_port()
    env = world.env(QWENKIT_HOME=str(home.root))
    proc = qwenkit(["install", "--yes", "--no-service", "--no-venv", "--host", "0.0.0.0", "--port", str(port)], env)
    try:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert re.search(r"warning: --host 0\.0\.0\.0: the server will accept connections from other machines "
                         r"\(every network interface\)", proc.stderr)
        address = lan_address() or "127.0.0.1"
        url = f"http://{address}:{port}/v1"
        assert f"endpoint     {url}" in proc.stdout  # the report: the install's output
        assert f"{url}/chat/completions" in proc.stdout  # the curl snippet
        assert f'base_url="{url}"' in proc.stdout  # the OpenAI snippet
        status = qwenkit(["status", "--json"], env)
        assert status.returncode == 0, status.stderr
        report = json.loads(status.stdout)
        assert report["endpoint"] == url and report["exposed"] is True
        with requests.Session() as session:
            session.trust_env = False
            assert session.get(f"http://{address}:{port}/health", timeout=10).status_code == 200
    finally:
        FallbackManager(home).stop()


def _default_route_interface() -> str | None:
    """The interface of the IPv4 default route the kernel uses, as it lists them (``/proc/net/route``: destination
    0; with several, the lowest metric wins)."""
    try:
        rows = [r.split() for r in Path("/proc/net/route").read_text().splitlines()[1:]]
    except OSError:
        return None
    defaults = [r for r in rows if len(r) > 6 and r[1] == "00000000" and r[6].isdigit()]
    return min(defaults, key=lambda r: int(r[6]))[0] if defaults else None


def test_the_lan_address_is_the_default_routes_interface() -> None:
    """Defect 8's address: the interface that carries the default route, not the first one listed (a container
    bridge comes first on many machines); an IPv4 wildcard never gets an IPv6 address."""
    import psutil

    iface = _default_route_interface()
    if iface is None:
        pytest.skip("this machine has no IPv4 default route (Linux /proc/net/route)")
    own = {a.address for a in psutil.net_if_addrs()[iface] if a.family == socket.AF_INET}
    assert lan_address() in own
    assert all(lan_address() not in {a.address for a in addresses}
               for name, addresses in psutil.net_if_addrs().items() if name != iface)


def test_a_key_others_can_read_is_reported_and_repaired_by_a_rerun(world: World) -> None:
    """Defect 11: ``status`` warns about a key (or its folder) other users can read; the no-op rerun makes both
    owner-only again, and says so, without doing any install work."""
    home = world.served
    home.api_key_file.chmod(0o644)
    home.secrets_dir.chmod(0o755)
    env = world.env(QWENKIT_HOME=str(home.root))
    status = qwenkit(["status", "--json"], env)
    assert status.returncode == 0, status.stderr
    warnings = json.loads(status.stdout)["warnings"]
    assert any(re.search(r"/secrets/api-key can be read by other users", w) for w in warnings), warnings
    assert any(re.search(r"/secrets can be read by other users", w) for w in warnings), warnings
    rerun = qwenkit(["install", "--yes", "--no-service", "--no-venv"], env)
    assert rerun.returncode == 0, rerun.stderr
    assert "Up to date" in rerun.stdout and "permissions are now owner-only (0600)" in rerun.stderr
    assert stat.S_IMODE(home.api_key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(home.secrets_dir.stat().st_mode) == 0o700
    after = qwenkit(["status", "--json"], env)
    assert json.loads(after.stdout)["warnings"] == [] and serving(home)
