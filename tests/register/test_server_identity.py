"""``server_identity``: who holds the install's port, as the OS tells it — never as the socket's answers tell it.

Every holder is a real process: a stranger is a separate Python process listening on the port
(``tests/support/stranger.py``), ours is the test bed's llama-server. What cannot be had without another machine is
only macOS's refusal to list other users' sockets (``psutil.AccessDenied``): that one answer is replaced, the
processes stay real. "An owner this user cannot see" is real too: the check runs as user ``nobody`` (the tests run
as root here) while root's stranger holds the port.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from bootstrap.core.console import set_language
from bootstrap.core.errors import ExitCode, ServerError
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register import server_identity
from bootstrap.register.server_identity import (
    PortHolder,
    free_port_after,
    is_our_server,
    port_holder,
    require_ours,
)
from tests.support.hub_fixtures import REPO_ROOT
from tests.support.llama import LlamaServer, free_port
from tests.support.stranger import Stranger


@pytest.fixture(autouse=True)
def english() -> None:
    set_language("en")


def spec_for(home: Path, port: int, server: Path | None = None, host: str = "127.0.0.1") -> LaunchSpec:
    engine = home / "engine" / "b10434-ubuntu-x64"
    return LaunchSpec(home=home, system="Linux", engine_dir=engine, server=server or engine / "llama-server",
                      model=home / "m.gguf", mmproj=None, args=(), alias="tiny", api_key_file=home / "secrets" / "k",
                      host=host, port=port)


def test_a_free_port_is_free(tmp_path: Path) -> None:
    holder = port_holder(spec_for(tmp_path, free_port()))
    assert holder.state == "free" and not holder.ours and not holder.foreign and holder.describe() == ""


def test_a_stranger_is_named_by_pid_and_process_name(tmp_path: Path) -> None:
    """A program that is not this home's engine holds the port: "stranger", its PID and name in the one line, and
    ``require_ours`` refuses with exit 6 and a free port to move to."""
    port = free_port()
    with Stranger(port, tmp_path / "seen.jsonl") as stranger:
        spec = spec_for(tmp_path, port)
        holder = port_holder(spec)
        name = psutil.Process(stranger.pid).name()
        assert holder == PortHolder("stranger", port, stranger.pid, name)
        assert holder.describe() == (f"port {port} is held by PID {stranger.pid} ({name}), not by this install's "
                                     "server; nothing was sent to it")
        with pytest.raises(ServerError) as info:
            require_ours(spec)
        assert info.value.exit_code == ExitCode.SERVER and info.value.message == holder.describe()
        other = free_port_after(spec)
        assert other > port and info.value.hint == (f"Stop that program, or move this install to another port: "
                                                    f"'qwenkit install --port {other}'.")
        # a wildcard-bound install is reached through loopback: the same stranger holds it
        assert port_holder(spec_for(tmp_path, port, host="0.0.0.0")).state == "stranger"
        assert stranger.requests() == []  # asking the OS sends the stranger nothing


def test_a_stranger_running_a_file_named_llama_server_is_still_a_stranger(tmp_path: Path) -> None:
    """The name alone proves nothing: a copy of the interpreter called ``llama-server`` outside this home's
    ``engine/`` is not ours; the same copy placed under ``<home>/engine/`` is (it is then the home's own file)."""
    port = free_port()
    fake = tmp_path / "elsewhere" / "llama-server"
    fake.parent.mkdir()
    shutil.copy2(sys.executable, fake)
    record = tmp_path / "seen.jsonl"
    record.write_text("")
    script = REPO_ROOT / "tests" / "support" / "stranger.py"
    proc = subprocess.Popen([str(fake), str(script), str(port), str(record)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        holder = port_holder(spec_for(tmp_path, port))
        assert holder.state == "stranger" and holder.pid == proc.pid and holder.name == "llama-server"
        assert is_our_server(psutil.Process(proc.pid), spec_for(tmp_path, port, server=fake))
        assert not is_our_server(psutil.Process(proc.pid), spec_for(tmp_path / "other-home", port))
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_homes_engine_is_ours(llama_server: Path, tiny_models: dict[str, Path], tmp_path: Path) -> None:
    """The test bed's llama-server as the recorded engine: "ours", with its PID; for a spec whose engine is another
    file it is a stranger (another home's server)."""
    with LlamaServer(llama_server, tiny_models["llama"], ["-c", "256", "-np", "1", "-t", "1"]) as server:
        ours = port_holder(spec_for(tmp_path, server.port, server=llama_server))
        assert ours.state == "ours" and ours.pid == server.proc.pid and ours.name.startswith("llama-server")
        assert require_ours(spec_for(tmp_path, server.port, server=llama_server)) == ours
        other = port_holder(spec_for(tmp_path / "other-home", server.port))
        assert other.state == "stranger" and other.pid == server.proc.pid


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown the home")
def test_our_engine_run_by_another_user_is_not_ours(llama_server: Path, tiny_models: dict[str, Path],
                                                    tmp_path: Path) -> None:
    """The engine file is right but the process runs as someone else than the home's owner (another user could
    run our engine with a key file of their own): not ours. Here the home is given to ``nobody``."""
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 65534, 65534)
    with LlamaServer(llama_server, tiny_models["llama"], ["-c", "256", "-np", "1", "-t", "1"]) as server:
        assert port_holder(spec_for(home, server.port, server=llama_server)).state == "stranger"


def test_where_the_os_lists_only_our_own_sockets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 llama_server: Path, tiny_models: dict[str, Path]) -> None:
    """macOS lists every socket only to root (``psutil.net_connections`` raises AccessDenied, psutil documentation):
    our own servers' sockets are still read per process; anything else that accepts connections is "hidden"."""
    def refused(kind: str = "inet") -> list[object]:
        raise psutil.AccessDenied(0)

    monkeypatch.setattr(server_identity.psutil, "net_connections", refused)
    port = free_port()
    assert port_holder(spec_for(tmp_path, port)).state == "free"
    with Stranger(port, tmp_path / "seen.jsonl"):
        holder = port_holder(spec_for(tmp_path, port))
        assert holder == PortHolder("hidden", port)
        assert holder.describe().startswith(f"port {port} is held by a program whose owner this user cannot see")
    with LlamaServer(llama_server, tiny_models["llama"], ["-c", "256", "-np", "1", "-t", "1"]) as server:
        ours = port_holder(spec_for(tmp_path, server.port, server=llama_server))
        assert ours.state == "ours" and ours.pid == server.proc.pid


def _nobody_python() -> list[str] | None:
    """A Python that user ``nobody`` can run with this kit and its venv's packages (the venv's own interpreter may
    live under /root), or None."""
    python = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    site = next((Path(p) for p in sys.path if p.endswith("site-packages") and str(REPO_ROOT) in p), None)
    if not python.is_file() or site is None or os.getuid() != 0:
        return None
    if not (_others_can_read(REPO_ROOT) and _others_can_read(site)):
        return None  # a checkout under a private folder (mktemp -d is 0700): nobody cannot import the kit
    return [str(python), str(site)]


def _others_can_read(path: Path) -> bool:
    """Whether a user who owns nothing here can list ``path`` (every folder above it searchable by others)."""
    folders = [path, *path.parents]
    return all(f.stat().st_mode & stat.S_IXOTH for f in folders) and bool(path.stat().st_mode & stat.S_IROTH)


@pytest.mark.skipif(_nobody_python() is None, reason="needs root, a system Python of this version and a venv "
                    "that others can read")
def test_an_owner_the_os_does_not_show_is_not_ours(tmp_path: Path) -> None:
    """Run as ``nobody``, the check cannot see who owns root's listening socket (Linux gives no PID for a socket in
    a process this user may not inspect): "hidden", said as such, never "ours"."""
    python, site = _nobody_python() or ["", ""]
    port = free_port()
    home = Path(tempfile.mkdtemp(prefix="qk-nobody-"))
    try:
        os.chmod(home, 0o755)
        code = ("import sys; from pathlib import Path; from bootstrap.core.console import set_language; "
                "set_language('en'); from bootstrap.plan.launch_spec import LaunchSpec; "
                "from bootstrap.register.server_identity import port_holder; h = Path(sys.argv[1]); "
                "s = LaunchSpec(home=h, system='Linux', engine_dir=h / 'engine', server=h / 'engine' / 'llama-server', "
                "model=h / 'm', mmproj=None, args=(), alias='a', api_key_file=h / 'k', port=int(sys.argv[2])); "
                "p = port_holder(s); print(p.state, p.pid); print(p.describe())")
        with Stranger(port, tmp_path / "seen.jsonl"):
            result = subprocess.run([python, "-c", code, str(home), str(port)], capture_output=True, text=True,
                                    timeout=60, env={"PYTHONPATH": f"{REPO_ROOT}:{site}", "PATH": "/usr/bin:/bin"},
                                    preexec_fn=lambda: (os.setgid(65534), os.setuid(65534)))
        assert result.returncode == 0, result.stderr
        state, describe = result.stdout.splitlines()
        assert state == "hidden None"
        assert describe == (f"port {port} is held by a program whose owner this user cannot see (another user's?), "
                            "so it is not known to be this install's server; nothing was sent to it")
    finally:
        shutil.rmtree(home, ignore_errors=True)
