"""The frozen setup's own logic: first-start checks (pass on this checkout, fail when each thing is missing), the
"press Enter" pause decision for a double-clicked Windows console, and the Windows version resource.

Resource lookup is pointed at a temporary package folder (``bootstrap.core.resources._PACKAGE_DIR``), the layout an
installed wheel has, so the real ``resource_dir`` runs. The TLS check reads a real, empty trust store through
OpenSSL's own ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``. Windows console process counts come from real Windows runs.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import build_installer
from bootstrap import __version__
from bootstrap.app.setup_checks import Problem, check_payload, check_templates, check_tls, first_start_checks
from bootstrap.app.setup_main import command_of, console_process_count, own_process_count, should_pause
from bootstrap.core import resources
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import seeded_bytes
from tests.support.paths import REPO_ROOT

ROOT = REPO_ROOT


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, english: None) -> Path:
    """A copy of templates/ and payload/ in the wheel layout (``<package>/_data``), the only place looked at."""
    package = tmp_path / "pkg" / "bootstrap"
    data = package / "_data"
    shutil.copytree(ROOT / "templates", data / "templates")
    shutil.copytree(ROOT / "payload", data / "payload")
    monkeypatch.setattr(resources, "_PACKAGE_DIR", package)
    return data


def whats(problems: list[Problem]) -> str:
    return "\n".join(p.what for p in problems)


def test_checks_pass_on_this_checkout(english: None) -> None:
    assert first_start_checks() == []


def test_checks_pass_on_a_complete_copy(data_dir: Path) -> None:
    assert first_start_checks() == []


def test_missing_folders_are_named(data_dir: Path) -> None:
    shutil.rmtree(data_dir)
    problems = first_start_checks()
    assert len(problems) == 2
    assert "'templates' folder is missing" in problems[0].what
    assert "'payload' folder is missing" in problems[1].what
    assert all("download it again" in p.hint for p in problems)


@pytest.mark.parametrize(("folder", "name"), [("templates", "run_qwen.sh.j2"), ("templates", "run_qwen.bat.j2"),
                                              ("payload", "catalog.toml"), ("payload", "engines.toml"),
                                              ("payload", "requirements.txt")])
def test_each_missing_file_is_one_problem(data_dir: Path, folder: str, name: str) -> None:
    (data_dir / folder / name).unlink()
    problems = first_start_checks()
    assert len(problems) == 1, whats(problems)
    assert name in problems[0].what and f"'{folder}' folder lacks" in problems[0].what


@pytest.mark.parametrize(("name", "text"), [("catalog.toml", "schema = [unclosed\n"),
                                            ("catalog.toml", "schema = 1\n"),
                                            ("engines.toml", "build = 'not a number'\n"),
                                            ("requirements.txt", "# only a comment\n")])
def test_a_payload_file_that_does_not_parse_is_named(data_dir: Path, name: str, text: str) -> None:
    (data_dir / "payload" / name).write_text(text, encoding="utf-8")
    problems = check_payload()
    assert len(problems) == 1, whats(problems)
    assert f"payload/{name} is unusable" in problems[0].what


def test_a_template_jinja_cannot_compile_is_named(data_dir: Path) -> None:
    (data_dir / "templates" / "run_qwen.sh.j2").write_text("{% if %}\n", encoding="utf-8")
    problems = check_templates()
    assert len(problems) == 1, whats(problems)
    assert problems[0].what.startswith("The template engine cannot render run_qwen.sh.j2")


def test_an_empty_trust_store_fails_the_tls_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  english: None) -> None:
    if sys.platform in ("win32", "darwin"):
        pytest.skip("the OS verifies there; OpenSSL's CA paths are not used")
    (tmp_path / "empty.pem").write_bytes(b"")
    (tmp_path / "certs").mkdir()
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "empty.pem"))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path / "certs"))
    problems = check_tls()
    assert len(problems) == 1
    assert "No trusted CA certificates" in problems[0].what and str(tmp_path / "empty.pem") in problems[0].what
    assert "SSL_CERT_FILE" in problems[0].hint
    # the same variables naming a real bundle: the count comes from what they point at
    certifi = pytest.importorskip("certifi")
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())
    assert check_tls() == []


# (platform, frozen, argv, console processes, own processes) → pause. Counts recorded on real Windows: a
# double-clicked onefile setup 2 (bootloader + Python), started from cmd.exe 3, from PowerShell 3; a onedir
# console program started by Explorer 1.
PAUSE_CASES = [
    pytest.param("win32", True, [], 2, 2, True, id="double-click-onefile"),
    pytest.param("win32", True, ["install", "--yes"], 2, 2, True, id="shortcut-with-arguments"),
    pytest.param("win32", True, [], 3, 2, False, id="from-cmd"),
    pytest.param("win32", True, ["install"], 3, 2, False, id="from-powershell"),
    pytest.param("win32", True, [], 1, 1, True, id="double-click-onedir"),
    pytest.param("win32", True, ["--version"], 2, 1, False, id="onedir-from-cmd"),
    pytest.param("win32", True, [], None, 2, True, id="count-unknown-no-arguments"),
    pytest.param("win32", True, ["selfcheck"], None, 2, False, id="count-unknown-with-arguments"),
    pytest.param("win32", False, [], 1, 1, False, id="source-checkout"),
    pytest.param("linux", True, [], None, 2, False, id="linux-frozen"),
    pytest.param("linux", True, [], 1, 2, False, id="linux-frozen-any-count"),
    pytest.param("darwin", True, [], None, 2, False, id="macos-frozen"),
]


@pytest.mark.parametrize(("platform", "frozen", "argv", "count", "own", "expected"), PAUSE_CASES)
def test_should_pause(platform: str, frozen: bool, argv: list[str], count: int | None, own: int,
                      expected: bool) -> None:
    assert should_pause(platform, frozen, argv, count, own) is expected


@pytest.mark.skipif(sys.platform == "win32", reason="off Windows there is no console process list")
def test_no_console_count_off_windows() -> None:
    assert console_process_count() is None
    assert own_process_count() == 1  # not frozen: one process


@pytest.mark.parametrize(("args", "command"), [([], None), (["install"], "install"), (["--debug", "bundle", "x"],
                                                "bundle"), (["--version"], None), (["doctor", "--json"], "doctor")])
def test_command_of(args: list[str], command: str | None) -> None:
    assert command_of(args) == command


def run_on_a_terminal(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run with stdin on a pseudo-terminal that is never written to: a pause would block until the timeout."""
    import pty

    controller, terminal = pty.openpty()
    try:
        return subprocess.run(cmd, stdin=terminal, capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    finally:
        os.close(terminal)
        os.close(controller)


def setup_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("QWENKIT_", "HF_", "MODELSCOPE_")) and not k.lower().endswith("_proxy")}
    return {**env, "QWENKIT_LANG": "en", "NO_COLOR": "1", "PYTHONPATH": str(ROOT), **extra}


# The setup entry point with ``sys.frozen`` set, as PyInstaller's bootloader sets it (resources still come from
# this checkout, since there is no _MEIPASS).
FROZEN_SNIPPET = ("import sys; sys.frozen = True; from bootstrap.app.setup_main import setup_main; "
                  "sys.exit(setup_main(sys.argv[1:]))")


@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_frozen_entry_checks_then_runs_the_cli_and_never_pauses_off_windows(tmp_path: Path) -> None:
    # an unknown option: the checks run and pass, then the CLI refuses it (exit 2); nothing gets installed
    proc = run_on_a_terminal([sys.executable, "-c", FROZEN_SNIPPET, "install", "--not-an-option"], setup_env())
    assert proc.returncode == 2, proc.stderr
    assert "Unrecognized arguments: --not-an-option." in proc.stderr
    assert "Press Enter" not in proc.stderr + proc.stdout
    # a failing check stops before the CLI: one line + hint, exit 1, no traceback
    (tmp_path / "empty.pem").write_bytes(b"")
    (tmp_path / "certs").mkdir()
    broken = setup_env(SSL_CERT_FILE=str(tmp_path / "empty.pem"), SSL_CERT_DIR=str(tmp_path / "certs"))
    proc = run_on_a_terminal([sys.executable, "-c", FROZEN_SNIPPET, "install", "--not-an-option"], broken)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[0].startswith("error: No trusted CA certificates")
    assert "Traceback" not in proc.stderr and "unrecognized" not in proc.stderr
    # commands that change nothing skip the checks
    proc = run_on_a_terminal([sys.executable, "-c", FROZEN_SNIPPET, "--version"], broken)
    assert proc.returncode == 0 and proc.stdout.strip() == f"qwenkit {__version__}"


@pytest.mark.parametrize(("version", "words"), [("0.1.0", (0, 1, 0, 0)), ("2.0rc1", (2, 0, 0, 0)),
                                                ("1.2.3.4.5", (1, 2, 3, 4)), ("7", (7, 0, 0, 0)),
                                                ("1.70000", (1, 65535, 0, 0))])
def test_version_tuple(version: str, words: tuple[int, int, int, int]) -> None:
    assert build_installer.version_tuple(version) == words


def test_version_tuple_refuses_a_non_version() -> None:
    with pytest.raises(ValueError, match="not a version"):
        build_installer.version_tuple("dev")


def _calls(node: ast.AST, name: str) -> list[ast.Call]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]


def test_version_file_names_the_version(tmp_path: Path) -> None:
    path = build_installer.write_version_file(tmp_path / "work")
    assert path == tmp_path / "work" / "version-info.txt" and not list(path.parent.glob("*.tmp"))
    tree = ast.parse(path.read_text(encoding="utf-8"), mode="eval")
    assert isinstance(tree.body, ast.Call) and isinstance(tree.body.func, ast.Name)
    assert tree.body.func.id == "VSVersionInfo"
    ffi = _calls(tree, "FixedFileInfo")[0]
    fields = {k.arg: ast.literal_eval(k.value) for k in ffi.keywords}
    assert fields["filevers"] == fields["prodvers"] == build_installer.version_tuple(__version__)
    assert fields["fileType"] == 0x1 and fields["OS"] == 0x40004  # VFT_APP, VOS_NT_WINDOWS32
    strings = {ast.literal_eval(c.args[0]): ast.literal_eval(c.args[1]) for c in _calls(tree, "StringStruct")}
    assert strings["FileVersion"] == strings["ProductVersion"] == __version__
    assert strings["OriginalFilename"] == "QwenClientKit-Setup.exe"


@pytest.mark.skipif(sys.platform != "win32", reason="PyInstaller's version-resource code needs pefile (Windows)")
def test_pyinstaller_loads_the_version_file(tmp_path: Path) -> None:
    from PyInstaller.utils.win32.versioninfo import load_version_info_from_text_file

    info = load_version_info_from_text_file(str(build_installer.write_version_file(tmp_path)))
    major, minor, patch, build = build_installer.version_tuple(__version__)
    assert info.ffi.fileVersionMS == (major << 16) | minor and info.ffi.fileVersionLS == (patch << 16) | build


@pytest.mark.parametrize("platform", ["win32", "linux", "darwin"])
def test_version_file_is_passed_only_on_windows(tmp_path: Path, platform: str) -> None:
    args = build_installer.pyinstaller_args(False, tmp_path / "d", tmp_path / "w", tmp_path / "v.txt", platform)
    assert ("--version-file" in args) is (platform == "win32")
    excluded = {args[i + 1] for i, a in enumerate(args) if a == "--exclude-module"}
    assert {"numpy", "pytest", "hf_xet", "huggingface_hub"} <= excluded  # the kit speaks the hub protocols itself
    # what the product imports at run time must never be excluded
    assert not excluded & {"requests", "urllib3", "truststore", "jinja2", "tqdm", "psutil", "pynvml", "cpuinfo",
                           "packaging"}


def imported_top_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_product_never_imports_an_excluded_module() -> None:
    """A module the build leaves out must not appear in any import of bootstrap/ (even a lazy one)."""
    offenders = {str(p.relative_to(ROOT)): sorted(imported_top_names(p) & set(build_installer.EXCLUDED_MODULES))
                 for p in (ROOT / "bootstrap").rglob("*.py")}
    assert {k: v for k, v in offenders.items() if v} == {}


CATALOG = """schema = 1
default_model = "tiny"

[[models]]
id = "tiny"
architecture = "llama"
default_quant = "Q4_K_M"
repos = [{ hub = "hf", repo = "acme/tiny-GGUF" }, { hub = "modelscope", repo = "acme/tiny-GGUF" }]
quants = [{ name = "Q4_K_M", file = "tiny-Q4_K_M.gguf" }]
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pseudo-terminal")
def test_frozen_build_runs_its_checks_and_downloads_without_the_excluded_modules(
        frozen_setup: Path, hub: LoopbackHub, tmp_path: Path) -> None:
    assert frozen_setup.stat().st_size <= 35_000_000
    proc = run_on_a_terminal([str(frozen_setup), "install", "--not-an-option"], setup_env())
    assert proc.returncode == 2 and "Unrecognized arguments" in proc.stderr, proc.stderr
    (tmp_path / "empty.pem").write_bytes(b"")
    (tmp_path / "certs").mkdir()
    proc = run_on_a_terminal([str(frozen_setup), "install"],
                             setup_env(SSL_CERT_FILE=str(tmp_path / "empty.pem"), SSL_CERT_DIR=str(tmp_path / "certs")))
    assert proc.returncode == 1 and proc.stderr.startswith("error: No trusted CA certificates"), proc.stderr
    # the hub SDK and both resolvers work inside the build: nothing they import at run time was excluded
    model = seeded_bytes(300_000, 5)
    hub.create_repo("acme/tiny-GGUF", {"tiny-Q4_K_M.gguf": model})
    (tmp_path / "catalog.toml").write_text(CATALOG, encoding="utf-8")
    env = setup_env(QWENKIT_HF_ENDPOINT=hub.endpoint, QWENKIT_MODELSCOPE_ENDPOINT=hub.endpoint,
                    QWENKIT_CATALOG=str(tmp_path / "catalog.toml"), QWENKIT_HOME=str(tmp_path / "home"),
                    NO_PROXY="127.0.0.1,localhost")
    for source in ("hf", "modelscope"):
        dest = tmp_path / source
        proc = run_on_a_terminal([str(frozen_setup), "download", "tiny", "--source", source, "--dest", str(dest)],
                                 env)
        assert proc.returncode == 0, proc.stderr
        assert (dest / "tiny-Q4_K_M.gguf").read_bytes() == model
