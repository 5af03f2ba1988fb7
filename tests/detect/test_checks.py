"""``qwenkit doctor``: verdicts on recorded machines, the engine-variant table, and the command as a user runs it."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from bootstrap.app import check_table, cli
from bootstrap.app.commands import doctor
from bootstrap.core import console
from bootstrap.core.errors import UnsupportedMachine
from bootstrap.detect.checks import DEFAULT_MODEL_BYTES, run_checks
from bootstrap.detect.hardware import Check, HardwareProfile, load_profile
from bootstrap.plan.engine_variant import check_engine, choose_variant, driver_major
from tests.detect.test_hardware import MACHINES, recorded_profile
from tests.support.paths import REPO_ROOT

GIB = 1 << 30
REPO = REPO_ROOT


pytestmark = pytest.mark.usefixtures("english")


def verdicts(p: HardwareProfile) -> dict[str, str]:
    return {c.id: c.verdict for c in run_checks(p, engine=check_engine)}


def check(p: HardwareProfile, check_id: str) -> Check:
    return next(c for c in run_checks(p, engine=check_engine) if c.id == check_id)


def with_gpu(p: HardwareProfile, **changes: object) -> HardwareProfile:
    return replace(p, gpus=(replace(p.gpus[0], **changes),))


def as_windows(p: HardwareProfile) -> HardwareProfile:
    return replace(p, os=replace(p.os, system="Windows", release="11", version="10.0.22631", machine="AMD64"))


# --- engine variant table ----------------------------------------------------------------------------------------

W = "WARNING"
# (machine, transform, expected variant, expected min_driver, substring every warning list must contain or None)
VARIANT_TABLE = [
    ("no_gpu_16gb", None, "win-cpu", None, None),
    ("rtx4060_8gb_16gb", None, "win-cuda-13", "580", None),  # driver 591.86, CC 8.9 (SASS): no warning
    ("rtx3070_8gb_32gb", None, "ubuntu-vulkan-x64", None, None),  # Linux: no CUDA tarball
    ("rtx3060_12gb", None, "ubuntu-vulkan-x64", None, None),
    ("t4_16gb", None, "ubuntu-vulkan-x64", None, None),
    ("rtx4090_24gb", None, "ubuntu-vulkan-x64", None, None),
    ("apple_m2_16gb", None, "macos-arm64", None, None),
    # the same recorded cards on Windows, to exercise each driver floor
    ("rtx3070_8gb_32gb", as_windows, "win-vulkan", "550", "older than 550"),  # 470.57.02: the loud case
    ("rtx4090_24gb", as_windows, "win-cuda-12.4", "550", None),  # 550.107.02
    ("rtx3060_12gb", as_windows, "win-cuda-13", "580", None),  # 580.95.05, CC 8.6
    ("t4_16gb", lambda p: with_gpu(as_windows(p), driver_version="581.15"), "win-cuda-13", "580",
     "compiles them"),  # CC 7.5 meets CUDA 13's floor but has no SASS: first-run JIT notice
    ("t4_16gb", lambda p: with_gpu(as_windows(p), driver_version="581.15", compute_capability="6.1"),
     "win-cuda-12.4", "550", "compiles them"),  # CC < 7.5: CUDA 13 is out even with a new driver
    ("rtx4060_8gb_16gb", lambda p: with_gpu(p, driver_version="549.99"), "win-vulkan", "550", "older than 550"),
    ("rtx4060_8gb_16gb", lambda p: with_gpu(p, driver_version=None), "win-vulkan", "550", "could not be read"),
    ("rtx4060_8gb_16gb", lambda p: with_gpu(p, vendor="amd", name="AMD Radeon RX 7600", driver_version=None,
                                            cuda_driver_version=None, compute_capability=None), "win-vulkan",
     None, None),
    ("no_gpu_16gb", lambda p: replace(p, os=replace(p.os, system="Linux", machine="x86_64")), "ubuntu-x64", None,
     None),
    ("apple_m2_16gb", lambda p: replace(p, gpus=(), cpu=replace(p.cpu, arch="x86_64")), "macos-x64", None, None),
    # AMD and Intel GPUs of their own run the Vulkan build on both systems; the integrated GPU beside them is ignored
    ("rx7900xtx_24gb_linux", None, "ubuntu-vulkan-x64", None, None),
    ("rx6700xt_12gb_windows", None, "win-vulkan", None, None),
    ("arc_a750_8gb_linux", None, "ubuntu-vulkan-x64", None, None),
    # only an integrated GPU: the CPU build, with the carve-out it keeps (8 GiB) named
    ("radeon780m_igpu_windows", None, "win-cpu", None, "keeps 8.2 GiB of RAM reserved"),
    ("rx7900xtx_24gb_linux", lambda p: replace(p, gpus=p.gpus[:1]), "ubuntu-x64", None, None),  # 512 MiB: no note
    ("arc_a750_8gb_linux", lambda p: replace(p, gpus=p.gpus[:1]), "ubuntu-x64", None, None),
]


@pytest.mark.parametrize(("machine", "transform", "variant", "min_driver", "warning"), VARIANT_TABLE)
def test_variant_table(machine: str, transform: Callable[[HardwareProfile], HardwareProfile] | None, variant: str,
                       min_driver: str | None, warning: str | None) -> None:
    p = recorded_profile(machine)
    choice = choose_variant(transform(p) if transform else p)
    assert choice.name == variant and choice.min_driver == min_driver and choice.reason
    if warning is None:
        assert choice.warnings == ()
    else:
        assert any(warning in w for w in choice.warnings), choice.warnings


def test_linux_nvidia_reason_mentions_source_build() -> None:
    reason = choose_variant(recorded_profile("rtx4090_24gb")).reason
    assert "no Linux CUDA build" in reason and "from source" in reason


def test_an_integrated_gpu_alone_gets_the_cpu_build_and_says_why() -> None:
    p = recorded_profile("radeon780m_igpu_windows")
    c = check(p, "engine")
    assert c.verdict == "warn" and "integrated GPU" in c.reason and "win-cpu" in c.reason
    assert "BIOS" in c.hint and "UMA" in c.hint
    gpu = check(p, "gpu")
    assert gpu.reason == "AMD Radeon 780M Graphics: integrated GPU sharing the RAM (8.2 GiB reserved for it)"


def test_doctor_names_amd_and_intel_gpus_with_their_memory() -> None:
    assert check(recorded_profile("rx7900xtx_24gb_linux"), "gpu").reason == (
        "AMD Raphael: integrated GPU sharing the RAM (0.5 GiB reserved for it); "
        "AMD Radeon RX 7900 XTX: 24.0 GiB VRAM (23.4 GiB free)")
    assert check(recorded_profile("rx6700xt_12gb_windows"), "gpu").reason == (
        "AMD Radeon RX 6700 XT: 12.0 GiB VRAM (how much is free: once the engine lists it)")
    assert check(recorded_profile("arc_a750_8gb_linux"), "gpu").reason == (
        "Intel UHD Graphics 730: integrated GPU sharing the RAM; "
        "Intel Arc A750: 8.0 GiB VRAM (how much is free: once the engine lists it)")


def test_old_windows_driver_is_a_loud_engine_warning() -> None:
    p = as_windows(recorded_profile("rtx3070_8gb_32gb"))
    c = check(p, "engine")
    assert c.verdict == "warn"
    assert "WARNING: driver 470.57.02 is older than 550" in c.reason and "fall back to the CPU" in c.reason
    assert "550 or newer" in c.hint


def test_unsupported_platforms_fail_the_engine_check() -> None:
    p = recorded_profile("rtx3060_12gb")
    arm_linux = replace(p, cpu=replace(p.cpu, arch="arm64"))  # the Raspberry Pi CM5 the readings came from
    with pytest.raises(UnsupportedMachine):
        choose_variant(arm_linux)
    assert check(arm_linux, "engine").verdict == "fail"
    freebsd = replace(p, os=replace(p.os, system="FreeBSD"))
    assert verdicts(freebsd)["engine"] == "fail" and verdicts(freebsd)["os"] == "fail"


def test_driver_major() -> None:
    assert [driver_major(v) for v in ("550.54.14", "591.86", "", None, "abc")] == [550, 591, None, None, None]


# --- verdicts ------------------------------------------------------------------------------------------------------

EXPECTED_VERDICTS = {
    "no_gpu_16gb": {"os": "ok", "cpu": "ok", "ram": "ok", "disk": "ok", "gpu": "ok", "engine": "ok",
                    "python": "ok", "network": "ok"},
    "rtx3070_8gb_32gb": {"python": "warn"},  # only 3.8 installed, 3.10 did not answer
    "rtx4060_8gb_16gb": {},
    "rtx3060_12gb": {},
    "t4_16gb": {},
    "rtx4090_24gb": {},
    "apple_m2_16gb": {},
    "rx7900xtx_24gb_linux": {},
    "rx6700xt_12gb_windows": {},
    "arc_a750_8gb_linux": {},
    # the 8 GiB the BIOS reserved for the integrated GPU is memory the CPU build cannot use; no Python recorded
    "radeon780m_igpu_windows": {"engine": "warn", "python": "warn"},
    "no_gpu_2core_24gb": {},  # the 2-core CI VM: every check passes; the plan, not doctor, picks a smaller model
}


@pytest.mark.parametrize("machine", MACHINES)
def test_recorded_machines_verdicts(machine: str) -> None:
    expected = {key: "ok" for key in EXPECTED_VERDICTS["no_gpu_16gb"]} | EXPECTED_VERDICTS[machine]
    assert verdicts(recorded_profile(machine)) == expected


def test_ram_below_8_gib_fails() -> None:
    p = recorded_profile("no_gpu_16gb")
    small = replace(p, memory=replace(p.memory, total_bytes=8 * GIB - 1, available_bytes=4 * GIB))
    c = check(small, "ram")
    assert c.verdict == "fail" and "8 GiB" in c.hint
    assert check(replace(p, memory=replace(p.memory, total_bytes=8 * GIB)), "ram").verdict == "ok"


def test_disk_below_default_model_warns() -> None:
    p = recorded_profile("rtx4090_24gb")
    tight = replace(p, disk=replace(p.disk, free_bytes=DEFAULT_MODEL_BYTES - 1))
    c = check(tight, "disk")
    assert c.verdict == "warn" and "21.5 GiB" in c.hint  # 23,033,812,672 bytes
    assert check(replace(p, disk=replace(p.disk, free_bytes=DEFAULT_MODEL_BYTES)), "disk").verdict == "ok"


def test_cpu_without_avx2_and_containers_warn() -> None:
    p = recorded_profile("t4_16gb")
    old = replace(p, cpu=replace(p.cpu, flags=replace(p.cpu.flags, avx2=False, avx512=False)))
    assert verdicts(old)["cpu"] == "warn"
    assert verdicts(replace(p, os=replace(p.os, container=True)))["os"] == "warn"
    assert verdicts(replace(p, os=replace(p.os, wsl=True)))["os"] == "warn"


def test_network_verdicts(tmp_path: Path) -> None:
    p = recorded_profile("rtx4060_8gb_16gb")
    missing = replace(p, network=replace(p.network, ca_bundle=str(tmp_path / "corp.pem")))
    assert check(missing, "network").verdict == "warn"
    (tmp_path / "corp.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    assert check(missing, "network").verdict == "ok"
    assert check(replace(p, network=replace(p.network, truststore=False)), "network").verdict == "warn"
    proxied = replace(p, network=replace(p.network, https_proxy="http://***@proxy.corp:3128"))
    assert "proxy http://***@proxy.corp:3128" in check(proxied, "network").reason


# --- the command ---------------------------------------------------------------------------------------------------

def test_human_table_is_aligned_in_chinese() -> None:
    console.set_language("zh")
    p = as_windows(recorded_profile("rtx3070_8gb_32gb"))
    lines = check_table.render_table(run_checks(p, engine=check_engine))
    assert lines[0].startswith("项目")
    rows = [line for line in lines[1:] if not line.lstrip().startswith("→")]
    # the details column starts at the same terminal column on every row (CJK counts double)
    starts = {check_table.display_width(row[: row.index(row.split("  ")[-1])]) for row in rows}
    assert len(rows) == 8 and len(starts) == 1
    assert any("低于 550" in line for line in lines)


def _env(lang: str, home: Path) -> dict[str, str]:
    return {**os.environ, "QWENKIT_LANG": lang, "QWENKIT_HOME": str(home), "PYTHONPATH": str(REPO)}


def _run_doctor(args: str, lang: str, home: Path) -> subprocess.CompletedProcess[str]:
    """The doctor command in a fresh interpreter (its module's run(), as cli.dispatch calls it)."""
    code = ("import argparse, sys; from bootstrap.app.commands import doctor; "
            f"sys.exit(doctor.run(argparse.Namespace(json={args == '--json'})))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(lang, home),
                          cwd=REPO, timeout=120)


def test_doctor_json_is_exactly_a_profile(tmp_path: Path) -> None:
    proc = _run_doctor("--json", "en", tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # exactly one document: json.loads rejects trailing data
    profile = HardwareProfile.from_json(doc)
    saved = tmp_path / "me.json"
    saved.write_text(proc.stdout, encoding="utf-8")
    assert load_profile(saved) == profile and profile.to_json() == doc
    assert proc.stderr == ""


def test_doctor_human_output_in_chinese(tmp_path: Path) -> None:
    proc = _run_doctor("", "zh", tmp_path / "home")
    # the report is the command's output: stdout ('qwenkit doctor > report.txt')
    assert proc.returncode == 0 and "体检" not in proc.stderr
    assert "体检" in proc.stdout and "内存" in proc.stdout and "退出码为 0" in proc.stdout


@pytest.mark.skipif(cli.COMMANDS.get("doctor") is None, reason="bootstrap/app/cli.py COMMANDS['doctor'] not wired yet")
def test_qwenkit_doctor_json_through_the_cli(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "doctor", "--json"], capture_output=True, text=True,
                          env=_env("en", tmp_path / "home"), cwd=REPO, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert HardwareProfile.from_json(json.loads(proc.stdout)).schema == 1


def test_run_in_process_returns_zero(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QWENKIT_HOME", str(tmp_path / "home"))
    assert doctor.run(argparse.Namespace(json=False)) == 0
    out = capsys.readouterr().out
    assert "memory" in out and "Exit code is 0" in out
