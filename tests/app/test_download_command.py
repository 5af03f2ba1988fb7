"""``qwenkit download`` end to end against the loopback hub: files placed verified, reruns reuse them, a catalog
id brings model + mmproj, failover mid-file ends verified, and every bad input is one line with its exit code.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bootstrap.app import cli
from bootstrap.app.commands import download as download_command
from bootstrap.core.errors import ExitCode, UsageError
from bootstrap.core.home import Home
from bootstrap.fetch.download import FetchOptions, fetch_files
from bootstrap.fetch.sources import remote_files, resolve_files, sources_for
from tests.support.bundle_files import model_bundle
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT, seeded_bytes
from tests.support.kill_harness import sees_ctrl_c

REPO = "acme/tiny-GGUF"
MODEL = seeded_bytes(3 * 1024 * 1024 + 5, 21)
MMPROJ = seeded_bytes(90_000, 22)
FILES = {"tiny-Q4_K_M.gguf": MODEL, "tiny-Q8_0.gguf": MODEL[::-1], "mmproj-F16.gguf": MMPROJ}


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def catalog_toml(hint: str | None = None) -> str:
    hint_field = f', sha256_hint = "{hint}"' if hint else ""
    return f"""
schema = 1
default_model = "tiny"

[[models]]
id = "tiny"
architecture = "llama"
default_quant = "Q4_K_M"
repos = [{{ hub = "hf", repo = "{REPO}" }}, {{ hub = "modelscope", repo = "{REPO}" }}]
quants = [
  {{ name = "Q8_0", file = "tiny-Q8_0.gguf" }},
  {{ name = "Q4_K_M", file = "tiny-Q4_K_M.gguf"{hint_field} }},
]
mmproj = {{ file = "mmproj-F16.gguf" }}
"""


@pytest.fixture
def env(hub: LoopbackHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Endpoints, home and catalog for both the in-process runs (monkeypatched) and subprocesses (returned)."""
    hub.create_repo(REPO, FILES)
    (tmp_path / "catalog.toml").write_text(catalog_toml(), encoding="utf-8")
    values = {
        "QWENKIT_HF_ENDPOINT": hub.endpoint,
        "QWENKIT_MODELSCOPE_ENDPOINT": hub.endpoint,
        "QWENKIT_HOME": str(tmp_path / "home"),
        "QWENKIT_CATALOG": str(tmp_path / "catalog.toml"),
        "QWENKIT_LANG": "en",
        "NO_PROXY": "127.0.0.1,localhost",
        "NO_COLOR": "1",
    }
    for name in ("HF_ENDPOINT", "MODELSCOPE_ENDPOINT", "HF_TOKEN", "HTTPS_PROXY", "HTTP_PROXY", "https_proxy",
                 "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    scrubbed = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "QWENKIT_", "MODELSCOPE_"))}
    return {**scrubbed, **values, "PYTHONPATH": str(REPO_ROOT)}


def run_cli(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``python -m bootstrap ARGS``, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "bootstrap", *args], env=env, cwd=str(REPO_ROOT), capture_output=True,
                          text=True, timeout=120, check=False)


def test_hub_file_placed_verified_and_reused(env: dict[str, str], hub: LoopbackHub, tmp_path: Path) -> None:
    dest = tmp_path / "out"
    proc = run_cli(["download", f"hf:{REPO}/tiny-Q4_K_M.gguf", "--dest", str(dest)], env)
    assert proc.returncode == 0, proc.stderr
    placed = dest / "tiny-Q4_K_M.gguf"
    assert sha256(placed.read_bytes()) == sha256(MODEL)
    # the final path is the command's output (stdout: '$(qwenkit download …)' and '> list.txt' get it)
    assert str(placed) in proc.stdout and sha256(MODEL)[:12] in proc.stdout and "from hf" in proc.stdout
    assert str(placed) not in proc.stderr
    assert list((dest / ".qwenkit-partial").iterdir()) == []  # partials sat beside the destination, now gone
    served = hub.bytes_served("tiny-Q4_K_M.gguf")

    again = run_cli(["download", f"hf:{REPO}/tiny-Q4_K_M.gguf", "--dest", str(dest)], env)
    assert again.returncode == 0, again.stderr
    assert "already present" in again.stdout and str(placed) in again.stdout
    assert hub.bytes_served("tiny-Q4_K_M.gguf") == served  # not one byte downloaded again


def test_catalog_id_fetches_model_and_mmproj_into_the_home(env: dict[str, str], tmp_path: Path) -> None:
    rc = download_command.run(argparse.Namespace(model="tiny", source="auto", dest=None))
    home_models = tmp_path / "home" / "models" / REPO
    assert rc == 0
    assert sha256((home_models / "tiny-Q4_K_M.gguf").read_bytes()) == sha256(MODEL)
    assert sha256((home_models / "mmproj-F16.gguf").read_bytes()) == sha256(MMPROJ)
    rc = download_command.run(argparse.Namespace(model="tiny:q8_0", source="modelscope", dest=None))
    assert rc == 0 and sha256((home_models / "tiny-Q8_0.gguf").read_bytes()) == sha256(MODEL[::-1])


def test_split_gguf_brings_every_shard(env: dict[str, str], hub: LoopbackHub, tmp_path: Path) -> None:
    shards = {f"split/big-{i:05d}-of-00003.gguf": seeded_bytes(5000 + i, 30 + i) for i in (1, 2, 3)}
    hub.commit(REPO, shards)
    rc = download_command.run(argparse.Namespace(model=f"ms:{REPO}/split/big-00001-of-00003.gguf", source="auto",
                                                 dest=str(tmp_path / "d")))
    assert rc == 0
    assert {p.name: sha256(p.read_bytes()) for p in (tmp_path / "d").glob("*.gguf")} == {
        k.split("/")[1]: sha256(v) for k, v in shards.items()}


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.mark.parametrize(("argv", "code"), [
    (["download", "no-such-model"], ExitCode.USAGE),
    (["download", "tiny:Q3_NOPE"], ExitCode.USAGE),
    (["download", f"hf:{REPO}/missing.gguf"], ExitCode.USAGE),
    (["download", f"ms:{REPO}/missing.gguf"], ExitCode.USAGE),
    (["download", "hf:acme"], ExitCode.USAGE),
    (["download", "./local-model.gguf"], ExitCode.USAGE),
    (["download", "tiny", "--source", "ftp://nowhere"], ExitCode.USAGE),
    (["download", f"hf:{REPO}/tiny-Q4_K_M.gguf@no-such-branch"], ExitCode.USAGE),
])
def test_bad_input_is_one_line_and_exit_2(env: dict[str, str], capsys: pytest.CaptureFixture[str],
                                          argv: list[str], code: ExitCode) -> None:
    assert cli.main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert len([ln for ln in err.splitlines() if ln.startswith("error:")]) == 1, err


def test_unreachable_source_exit_4(env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("QWENKIT_HF_ENDPOINT", closed_port_url())
    monkeypatch.setenv("QWENKIT_MODELSCOPE_ENDPOINT", closed_port_url())
    assert cli.main(["download", "tiny"]) == ExitCode.SOURCE
    err = capsys.readouterr().err
    assert "connection refused" in err and "--bundle" in err and "HTTPConnectionPool" not in err


def test_catalog_hint_mismatch_exit_5(env: dict[str, str], tmp_path: Path, hub: LoopbackHub,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "catalog.toml").write_text(catalog_toml("ac0e2c1189e0…3e31a61"), encoding="utf-8")
    assert cli.main(["download", "tiny"]) == ExitCode.INTEGRITY
    assert "ac0e2c1189e0…3e31a61" in capsys.readouterr().err
    assert hub.bytes_served("tiny-Q4_K_M.gguf") == 0  # refused on the listing: not even a probe read
    digest = sha256(MODEL)
    (tmp_path / "catalog.toml").write_text(catalog_toml(f"{digest[:12]}…{digest[-7:]}"), encoding="utf-8")
    assert cli.main(["download", "tiny"]) == 0


def make_bundle(root: Path, tamper: bool = False) -> Path:
    model_bundle(root, REPO, [("tiny-Q4_K_M.gguf", MODEL)], tamper=tamper)
    return root


def test_bundle_directory_copies_verified(env: dict[str, str], tmp_path: Path, hub: LoopbackHub,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    bundle = make_bundle(tmp_path / "usb")
    dest = tmp_path / "out"
    assert cli.main(["download", f"hf:{REPO}/tiny-Q4_K_M.gguf", "--source", str(bundle), "--dest", str(dest)]) == 0
    assert sha256((dest / "tiny-Q4_K_M.gguf").read_bytes()) == sha256(MODEL)
    assert "from bundle" in capsys.readouterr().out and hub.bytes_served() == 0  # the result: stdout
    bad = make_bundle(tmp_path / "bad", tamper=True)
    assert cli.main(["download", f"hf:{REPO}/tiny-Q4_K_M.gguf", "--source", str(bad), "--dest",
                     str(tmp_path / "out2")]) == ExitCode.INTEGRITY
    assert not (tmp_path / "out2" / "tiny-Q4_K_M.gguf").exists()


@pytest.fixture
def ms_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> Iterator[LoopbackHub]:
    """A second hub serving ModelScope, so the two sources can fail independently."""
    with LoopbackHub(tmp_path / "hub2") as h:
        h.create_repo(REPO, FILES)
        monkeypatch.setenv("QWENKIT_MODELSCOPE_ENDPOINT", h.endpoint)
        yield h


def test_failover_mid_file_ends_verified(hub: LoopbackHub, ms_hub: LoopbackHub, tmp_path: Path) -> None:
    big = seeded_bytes(6 * 1024 * 1024 + 5, 23)  # >= 4 MiB: cut into 1 MiB segments, one request each
    hub.commit(REPO, {"big.gguf": big})
    ms_hub.commit(REPO, {"big.gguf": big})
    ms_hub.inject("throttle", rate=128 * 1024, path_glob="big.gguf", times=1)  # slow probe: hf ranks first
    hub.inject("throttle", rate=1 << 20, path_glob="big.gguf", times=None)  # ~1 s per segment and connection
    resolution = resolve_files(["big.gguf"], sources_for("auto", download_command.wanted_files("tiny")[1]))
    (remote,) = remote_files(resolution)
    assert [m.source for m in remote.mirrors] == ["hf", "modelscope"]
    hf_probe, ms_probe = hub.bytes_served("big.gguf"), ms_hub.bytes_served("big.gguf")

    def cut_hf_mid_file() -> None:  # hf goes away once it has delivered a whole segment (the log counts those)
        deadline = time.monotonic() + 60
        while hub.bytes_served("big.gguf") < hf_probe + (1 << 20) and time.monotonic() < deadline:
            time.sleep(0.02)
        hub.stop()

    killer = threading.Thread(target=cut_hf_mid_file, daemon=True)
    killer.start()
    dest = tmp_path / "out" / "big.gguf"
    (result,) = fetch_files([(remote, dest)], tmp_path / "partial",
                            FetchOptions(connections=2, quiet=True, max_attempts=2, backoff_base=0.05,
                                         backoff_cap=0.2))
    killer.join(5)
    assert sha256(dest.read_bytes()) == sha256(big) and result.sha256 == sha256(big)
    from_hf = hub.bytes_served("big.gguf") - hf_probe
    from_ms = ms_hub.bytes_served("big.gguf") - ms_probe
    assert from_hf >= 1 << 20 and 0 < from_ms <= len(big) - (1 << 20)  # modelscope finished what hf had not


@pytest.mark.parametrize("path", ["../escape.gguf", "/etc/x.gguf", "a/./b.gguf", "C:/x.gguf", "a\\..\\b.gguf"])
def test_destination_never_leaves_its_folder(tmp_path: Path, path: str) -> None:
    with pytest.raises(UsageError):
        download_command.destinations([path], REPO, None, Home(tmp_path))
    with pytest.raises(UsageError):
        download_command.destinations(["ok.gguf"], path.removesuffix(".gguf"), None, Home(tmp_path))


def test_partial_folder_stays_on_the_destination_filesystem(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    targets, partial = download_command.destinations(["sub/m.gguf"], REPO, None, home)
    assert targets == [home.models_dir / REPO / "sub/m.gguf"] and partial == home.partial_dir
    targets, partial = download_command.destinations(["sub/m.gguf"], REPO, home.root / "mine", home)
    assert targets == [home.root / "mine" / "m.gguf"] and partial == home.partial_dir
    targets, partial = download_command.destinations(["sub/m.gguf"], REPO, tmp_path / "usb", home)
    assert partial == tmp_path / "usb" / ".qwenkit-partial"


# ---- what a person (or a log) sees during a download ------------------------------------------------------------

BIG = seeded_bytes(6 * 1024 * 1024 + 5, 24)  # >= 4 MiB: 1 MiB segments, so a stopped run leaves whole ones


def _start_cli(args: list[str], env: dict[str, str], **streams: Any) -> subprocess.Popen[bytes]:
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, **streams}
    return subprocess.Popen([sys.executable, "-m", "bootstrap", *args], env=env, cwd=str(REPO_ROOT),
                            preexec_fn=sees_ctrl_c, **streams)


def test_off_a_terminal_progress_is_a_few_plain_lines(env: dict[str, str], hub: LoopbackHub,
                                                      tmp_path: Path) -> None:
    hub.commit(REPO, {"big.gguf": BIG})
    hub.inject("throttle", rate=1 << 20, path_glob="big.gguf", times=None)  # a few seconds, as in the issue
    started = time.monotonic()
    proc = _start_cli(["download", f"hf:{REPO}/big.gguf", "--dest", str(tmp_path / "out")], env)
    _, raw = proc.communicate(timeout=120)  # bytes: text mode would turn a "\r" into a newline
    elapsed = time.monotonic() - started
    err = raw.decode()
    assert proc.returncode == 0, err
    assert "\r" not in err and "\x1b" not in err  # no redraws, no cursor moves
    lines = err.splitlines()
    progress = [line for line in lines if line.startswith("big.gguf:")]
    assert progress[0] == "big.gguf: downloading 6.0 MiB"
    assert re.fullmatch(r"big\.gguf: 6\.0 MiB in \d+\.\d s \(\S+ \S+/s\)", progress[-1]), progress
    assert len(progress) <= 2 + int(elapsed // 10) and len(lines) <= 8, err


def test_on_a_terminal_progress_is_a_bar(env: dict[str, str], hub: LoopbackHub, tmp_path: Path) -> None:
    hub.commit(REPO, {"big.gguf": BIG})
    hub.inject("throttle", rate=4 << 20, path_glob="big.gguf", times=None)
    termios = pytest.importorskip("termios")  # POSIX terminals only
    import fcntl
    import pty

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a window, as a terminal has
    try:
        proc = _start_cli(["download", f"hf:{REPO}/big.gguf", "--dest", str(tmp_path / "out")], env,
                          stderr=follower)
        os.close(follower)
        seen = bytearray()
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            seen += chunk
        assert proc.wait(60) == 0, seen.decode(errors="replace")
    finally:
        os.close(leader)
    text = seen.decode(errors="replace")
    assert "\r" in text and "big.gguf" in text and "%|" in text  # tqdm's bar, redrawn in place
    assert "downloading 6.0 MiB" not in text  # the plain lines are for pipes and logs only
    assert "6.0 MiB / 6.0 MiB" in text and "MB" not in text.replace("MiB", "")  # the plan's units, not tqdm's SI


def test_ctrl_c_is_interrupted_and_the_rerun_resumes(env: dict[str, str], hub: LoopbackHub, tmp_path: Path) -> None:
    hub.commit(REPO, {"big.gguf": BIG})
    throttle = hub.inject("throttle", rate=512 * 1024, path_glob="big.gguf", times=None)
    args = ["download", f"hf:{REPO}/big.gguf", "--dest", str(tmp_path / "out")]
    proc = _start_cli(args, env)
    deadline = time.monotonic() + 60
    while hub.bytes_served("big.gguf") < 2 << 20 and time.monotonic() < deadline:  # whole segments are on disk
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err_bytes = proc.communicate(timeout=60)
    err = err_bytes.decode()
    assert proc.returncode == 130, err
    assert "Interrupted; rerun the same command to continue (downloads resume)." in err.splitlines()
    assert "error:" not in err and "Traceback" not in err

    throttle.remove()
    again = run_cli(args, env)
    assert again.returncode == 0, again.stderr
    resumed = [line for line in again.stderr.splitlines() if "resuming" in line]
    # one story: what is left of what total, and what the earlier run kept (they add up)
    found = re.fullmatch(r"big\.gguf: resuming the download, (\d+\.\d) ([KM])iB left of 6\.0 MiB "
                         r"\((\d+\.\d) ([KM])iB kept from an earlier run\)", resumed[0]) if len(resumed) == 1 else None
    assert found is not None, again.stderr
    mib = {"K": 1 / 1024, "M": 1.0}  # each amount in the unit that reads best (human_size)
    assert abs(float(found[1]) * mib[found[2]] + float(found[3]) * mib[found[4]] - 6.0) <= 0.1
    assert sha256((tmp_path / "out" / "big.gguf").read_bytes()) == sha256(BIG)
