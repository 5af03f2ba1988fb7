"""The rendered service definitions, checked by the tools that read them.

systemd units go through the real ``systemd-analyze verify`` (systemd 252 here; exit 0 AND nothing on stderr,
since unknown keys only warn), with a negative control proving the check can fail. The launchd plist, the Task
Scheduler XML and the WinSW XML are parsed with the standard parsers their consumers follow (plistlib, an XML
parser) and every path and argument must round-trip exactly, for install homes with spaces, quotes, ``%``, ``$``,
``&``, ``\\`` and Chinese characters.
"""

from __future__ import annotations

import os
import plistlib
import pwd
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path, PureWindowsPath

import pytest

from bootstrap.core.home import Home
from bootstrap.core.processes import SERVER_STOP_TIMEOUT_S
from bootstrap.core.templating import QuotingError
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.launchd import LABEL, render_plist
from bootstrap.register.systemd import UNIT, render_unit
from bootstrap.register.windows_task import render_task_xml, write_task_xml
from bootstrap.register.winsw import render_winsw_xml
from tests.support.systemd_words import exec_words

# Legal in POSIX file names; systemd, the shell and XML each treat some of these specially.
POSIX_WEIRD = "Qwen 家 %h$HOME\"q'\\b&<x>!"
# Legal in Windows file names (no " < > | ? *); cmd.exe and XML treat some of these specially.
WINDOWS_WEIRD = "Qwen 家 %PATH% 100%!&'^(x)"
TASK_NS = {"t": "http://schemas.microsoft.com/windows/2004/02/mit/task"}

needs_analyze = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")


def _current_user() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def _verify(unit_text: str, folder: Path, *, user: bool) -> subprocess.CompletedProcess[str]:
    """``systemd-analyze [--user] verify`` on ``unit_text`` saved as ``qwenclientkit.service``."""
    folder.mkdir(parents=True, exist_ok=True)
    unit = folder / UNIT
    unit.write_text(unit_text, encoding="utf-8")
    env = dict(os.environ)
    cmd = ["systemd-analyze", "verify", str(unit)]
    if user:
        runtime = folder / "xdg-runtime"
        runtime.mkdir(mode=0o700)
        runtime.chmod(0o700)  # the user manager refuses a runtime dir others can read
        env["XDG_RUNTIME_DIR"] = str(runtime)
        cmd.insert(1, "--user")
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60, check=False)


@pytest.fixture
def weird_home(tmp_path: Path) -> Home:
    root = tmp_path / POSIX_WEIRD
    root.mkdir()
    return Home(root)


@needs_analyze
@pytest.mark.parametrize("scope", ["user", "system"])
def test_systemd_unit_passes_systemd_analyze_verify(scope: str, weird_home: Home, tmp_path: Path) -> None:
    text = render_unit(scope, weird_home, user=_current_user())  # type: ignore[arg-type]
    result = _verify(text, tmp_path / "units", user=scope == "user")
    assert (result.returncode, result.stderr) == (0, "")
    assert "Restart=always\n" in text and "RestartSec=3\n" in text
    # The one stop bound; SIGTERM then SIGKILL to the whole unit stay systemd's defaults (systemd.kill(5)).
    assert f"TimeoutStopSec={SERVER_STOP_TIMEOUT_S}\n" in text
    assert "KillMode=" not in text and "SendSIGKILL=" not in text and "KillSignal=" not in text
    wanted = "default.target" if scope == "user" else "multi-user.target"
    assert f"WantedBy={wanted}\n" in text
    assert ("User=" in text) is (scope == "system")


@needs_analyze
@pytest.mark.parametrize("scope", ["user", "system"])
def test_systemd_unit_starts_the_prompt_cache_keeper_after_each_start(scope: str, weird_home: Home,
                                                                      tmp_path: Path) -> None:
    """``ExecStartPost=`` starts the cache keeper (docs/prompt-cache.md): the kit's words may be a program inside
    the (weird) home, which systemd cannot take as a program word, so they travel as arguments of a fixed
    ``/bin/sh -c``; the real ``systemd-analyze verify`` accepts the line and its words read back exactly."""
    kit = (str(weird_home.venv_dir / "bin" / "qwenkit"),)
    text = render_unit(scope, weird_home, user=_current_user(), kit=kit)  # type: ignore[arg-type]
    result = _verify(text, tmp_path / "units", user=scope == "user")
    assert (result.returncode, result.stderr) == (0, "")
    lines = [line for line in text.splitlines() if line.startswith("ExecStartPost=")]
    assert len(lines) == 1 and lines[0].startswith("ExecStartPost=-")  # a keeper that fails never fails the unit
    assert exec_words(lines[0].removeprefix("ExecStartPost=")) == [
        "/bin/sh", "-c", 'exec "$0" "$@"', *kit, "cache-keeper", "--home", str(weird_home.root), "--detach"]
    assert "ExecStop=" not in text  # TimeoutStopSec is 1 s: no save at the stop
    # Negative control: the same words as ExecStartPost's program (no /bin/sh) are refused by systemd itself.
    wrapper = '"/bin/sh" -c "exec \\"$$0\\" \\"$$@\\"" '
    assert wrapper in lines[0]
    refused = _verify(text.replace(wrapper, ""), tmp_path / "bare", user=scope == "user")
    assert "Executable name contains special characters" in refused.stderr


@needs_analyze
def test_systemd_exec_word_resolves_to_the_exact_path(tmp_path: Path) -> None:
    """verify checks that ExecStart's program exists: a copy of /bin/sh under an odd folder proves the ``systemd``
    filter's quoting round-trips to the very bytes on disk. (The program word may not hold ``"'\\$`` at all,
    which is why the unit runs ``/bin/sh <home>/run_qwen.sh``: the home travels as an argument.)"""
    folder = tmp_path / "Qwen 家 %h&<x>!;|(~#`"
    folder.mkdir()
    shell = folder / "sh 程序"
    shutil.copy2("/bin/sh", shell)
    home = Home(tmp_path / POSIX_WEIRD)
    ok = _verify(render_unit("user", home, shell=str(shell)), tmp_path / "ok", user=True)
    assert (ok.returncode, ok.stderr) == (0, "")
    # Negative control: the same unit naming a program that is not there fails, with words on stderr.
    missing = _verify(render_unit("user", home, shell=str(folder / "absent")), tmp_path / "missing", user=True)
    assert missing.returncode != 0 and "absent" in missing.stderr


@needs_analyze
def test_systemd_analyze_catches_a_broken_unit(tmp_path: Path) -> None:
    """Negative control: a relative ExecStart and an unknown key must be reported, or the checks above prove nothing."""
    broken = "[Service]\nExecStart=run_qwen.sh\nRestartt=always\n\n[Install]\nWantedBy=default.target\n"
    result = _verify(broken, tmp_path / "broken", user=True)
    assert result.returncode != 0
    assert "Restartt" in result.stderr
    unknown_key_only = "[Service]\nExecStart=/bin/sh -c true\nRestartt=always\n"
    result = _verify(unknown_key_only, tmp_path / "unknown", user=False)
    assert result.stderr.strip(), "an unknown key only warns: stderr is the signal"


@pytest.mark.parametrize("bad", ["$", '"', "'", "\\"])
def test_systemd_program_word_refuses_what_systemd_cannot_carry(bad: str, weird_home: Home) -> None:
    with pytest.raises(QuotingError):
        render_unit("user", weird_home, shell=f"/opt/a{bad}b/sh")


def test_launchd_plist_round_trips_the_weird_path(weird_home: Home) -> None:
    plist = plistlib.loads(render_plist(weird_home).encode("utf-8"))
    assert plist["Label"] == LABEL
    assert plist["ProgramArguments"] == ["/bin/sh", str(weird_home.run_sh)]
    assert plist["WorkingDirectory"] == str(weird_home.root)
    assert plist["StandardOutPath"] == plist["StandardErrorPath"] == str(weird_home.logs_dir / "server.log")
    assert plist["RunAtLoad"] is True and plist["KeepAlive"] is True
    assert plist["LimitLoadToSessionType"] == "Aqua"
    assert plist["ExitTimeOut"] == SERVER_STOP_TIMEOUT_S  # an <integer>, not launchd's default 20 s


def _windows_spec(root: PureWindowsPath) -> LaunchSpec:
    engine = root / "engine" / "b10434-win-cuda-12.4-x64"
    return LaunchSpec(
        home=root, system="Windows", engine_dir=engine, server=engine / "llama-server.exe",  # type: ignore[arg-type]
        model=root / "models" / "unsloth" / "Qwen 3.6 & co" / "Qwen3.6-35B-A3B-UD-IQ4_XS.gguf",  # type: ignore[arg-type]
        mmproj=root / "models" / "mmproj-F16.gguf",  # type: ignore[arg-type]
        args=("-c", "32768", "-ngl", "999", "-ot", r"blk\.(1[0-9]|2[0-9])\.ffn_.*_exps\.=CPU",
              "--chat-template-kwargs", '{"enable_thinking": false}', "--temp", "0.7", "--reasoning-format", "none"),
        alias="qwen3.6-35b-a3b", api_key_file=root / "secrets" / "api-key",  # type: ignore[arg-type]
        host="0.0.0.0", port=8080,
    )


def test_task_scheduler_xml_is_utf16_and_round_trips(tmp_path: Path) -> None:
    root = PureWindowsPath("C:\\Users\\李雷 O'Brien\\AppData\\Local", WINDOWS_WEIRD)
    home = Home(root)  # type: ignore[arg-type]
    target = tmp_path / "task.xml"
    write_task_xml(target, render_task_xml(home, user_id="PC-01\\李雷"))
    raw = target.read_bytes()
    assert raw[:2] == b"\xff\xfe"  # UTF-16 LE byte-order mark, as schtasks /XML expects
    text = raw.decode("utf-16")
    assert "\r\n" in text and "\n" not in text.replace("\r\n", "")
    task = ET.fromstring(text)
    exec_ = task.find("t:Actions/t:Exec", TASK_NS)
    assert exec_ is not None
    assert exec_.findtext("t:Command", namespaces=TASK_NS) == str(root / "run_qwen.bat")
    assert exec_.findtext("t:WorkingDirectory", namespaces=TASK_NS) == str(root)
    # A task has no console: llama-server gets its log file through run_qwen.bat's %*, one double-quoted word
    # (cmd.exe reads & and spaces outside quotes), relative to the home the script runs it in: llama-server
    # fopen()s it with a narrow string, which fails under a non-ASCII user name such as this one.
    assert exec_.findtext("t:Arguments", namespaces=TASK_NS) == '--log-file "logs\\server.log"'
    assert task.findtext("t:Triggers/t:LogonTrigger/t:UserId", namespaces=TASK_NS) == "PC-01\\李雷"
    principal = task.find("t:Principals/t:Principal", TASK_NS)
    assert principal is not None
    assert principal.findtext("t:RunLevel", namespaces=TASK_NS) == "LeastPrivilege"
    assert principal.findtext("t:LogonType", namespaces=TASK_NS) == "InteractiveToken"
    settings = task.find("t:Settings", TASK_NS)
    assert settings is not None
    assert settings.findtext("t:RestartOnFailure/t:Interval", namespaces=TASK_NS) == "PT1M"
    assert settings.findtext("t:RestartOnFailure/t:Count", namespaces=TASK_NS) == "999"
    assert settings.findtext("t:ExecutionTimeLimit", namespaces=TASK_NS) == "PT0S"
    assert settings.findtext("t:MultipleInstancesPolicy", namespaces=TASK_NS) == "IgnoreNew"
    assert settings.findtext("t:DisallowStartIfOnBatteries", namespaces=TASK_NS) == "false"
    # A stop (schtasks /End) is TerminateProcess at once: the template's comment relies on this setting.
    assert settings.findtext("t:AllowHardTerminate", namespaces=TASK_NS) == "true"


def test_winsw_xml_round_trips_every_server_argument() -> None:
    root = PureWindowsPath("C:\\", WINDOWS_WEIRD)
    home = Home(root)  # type: ignore[arg-type]
    spec = _windows_spec(root)
    service = ET.fromstring(render_winsw_xml(spec, home).encode("utf-8"))
    assert service.findtext("id") == "qwenclientkit"
    assert service.findtext("executable") == str(spec.server)
    arguments = [a.text for a in service.findall("argument")]
    assert arguments == spec.server_args()
    # the key file relative to the working directory, the home (LaunchSpec.key_file_arg: a narrow-string open)
    assert arguments[arguments.index("--api-key-file") + 1] == "secrets\\api-key"
    assert service.findtext("workingdirectory") == str(root)
    assert service.findtext("logpath") == str(root / "logs")
    onfailure = service.find("onfailure")
    assert onfailure is not None and onfailure.attrib == {"action": "restart", "delay": "10 sec"}
    log = service.find("log")
    assert log is not None and log.attrib == {"mode": "roll-by-size"}
    assert service.findtext("stoptimeout") == f"{SERVER_STOP_TIMEOUT_S} sec"  # Ctrl+C, then TerminateProcess


def test_the_stop_bound_reaches_every_definition_as_a_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each renderer passes ``SERVER_STOP_TIMEOUT_S`` to its template: with another value in its place, every
    definition carries that one, so no template holds a number of its own."""
    from bootstrap.register import launchd, systemd, winsw

    bound = SERVER_STOP_TIMEOUT_S + 7
    for module in (launchd, systemd, winsw):
        monkeypatch.setattr(module, "SERVER_STOP_TIMEOUT_S", bound)
    home = Home(Path("/opt/qwen"))
    for scope in ("user", "system"):
        assert f"TimeoutStopSec={bound}\n" in render_unit(scope, home, user="li")  # type: ignore[arg-type]
    assert plistlib.loads(render_plist(home).encode("utf-8"))["ExitTimeOut"] == bound
    root = PureWindowsPath("C:\\", "Qwen")
    service = ET.fromstring(render_winsw_xml(_windows_spec(root), Home(root)).encode("utf-8"))  # type: ignore[arg-type]
    assert service.findtext("stoptimeout") == f"{bound} sec"
