"""kill -9 during ``qwenkit install`` (a first install, and an upgrade to a new hub revision), then a rerun: the
rerun completes and the home is exactly one verified, serving install, with nothing left over.

Two ways to kill: ``QWENKIT_KILL_AT=<point>`` makes the installer SIGKILL itself at a named step
(``bootstrap/core/checkpoints.py``): a run that exits instead of dying there means the step is never reached, and fails
the case. Random-time kills SIGKILL the installer's process group after a seeded delay within a normal run's
duration (the seed and delay are in the test id's table row, so a failure reproduces).

During an interrupted upgrade the previous server keeps serving until the installer stops it (``old-stopped``):
every earlier point checks that it still answers a chat request.

The default run samples ~10 cases; the rest are ``slow`` (``-m "slow or not slow"`` runs the full set). With
``QWENKIT_KILL_TABLE=<file>`` each case appends its row (``kill_harness.Row``) to that JSON-lines file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bootstrap.core.checkpoints import POINTS
from tests.support import kill_harness as kh
from tests.support.hub import LoopbackHub
from tests.support.install_bed import MODEL_FILE, MODEL_REPO, InstallBed
from tests.support.llama import free_port

pytestmark = pytest.mark.usefixtures("english")

FRESH_POINTS = ("locked", "recovered", "planned", "engine-staged", "engine-placed", "fetch-started", "fetched",
                "tuned", "old-stopped", "rendered", "registered", "started", "verified", "recorded", "cleaned")
VENV_POINTS = ("venv-created", "venv-ready")  # reached only when the runtime venv is built (fresh, wheelhouse)
UPGRADE_POINTS = ("locked", "recovered", "planned", "engine-placed", "fetch-started", "fetched", "tuned",
                  "old-stopped", "swap-journaled", "swap-half", "swapped", "rendered", "registered", "started",
                  "verified", "recorded", "cleaned")
DEFAULT = {(kh.FRESH, p) for p in ("fetch-started", "engine-staged", "started", "recorded")} | {
    (kh.UPGRADE, p) for p in ("fetch-started", "swap-half", "started", "verified")}
RANDOM_SEEDS = tuple(range(1, 11))  # odd: a first install, even: an upgrade
DEFAULT_SEEDS = {1, 2}
KILLED = -9  # subprocess's returncode for a SIGKILLed child

# A normal run's duration per scenario, measured once per session (the window for random-time kills).
_windows: dict[str, float] = {}


def _cases() -> list[object]:
    cases = []
    for scenario, point in ([(kh.FRESH, p) for p in FRESH_POINTS + VENV_POINTS]
                            + [(kh.UPGRADE, p) for p in UPGRADE_POINTS]):
        marks = () if (scenario, point) in DEFAULT else (pytest.mark.slow,)
        cases.append(pytest.param(scenario, point, id=f"{scenario}-{point}", marks=marks))
    return cases


def _random_cases() -> list[object]:
    return [pytest.param(seed, id=f"random-{seed}", marks=() if seed in DEFAULT_SEEDS else (pytest.mark.slow,))
            for seed in RANDOM_SEEDS]


def test_every_checkpoint_is_exercised() -> None:
    """A new checkpoint must get a case here, and a case may not name a step that does not exist."""
    assert set(FRESH_POINTS) | set(VENV_POINTS) | set(UPGRADE_POINTS) == set(POINTS)


def _baseline(bed: InstallBed, revisions: kh.Revisions, argv: tuple[str, ...], port: int) -> str:
    """The first revision installed and answering, then the catalog moved to the second (what an update does).
    Returns the API key, which clients hold and an upgrade must keep."""
    first = bed.install(*argv)
    assert first.returncode == 0, first.stderr[-2000:]
    assert kh.answers(bed.home, port)
    bed.pin(revisions.second)
    return bed.home.api_key_file.read_text(encoding="utf-8")


def _rerun_and_check(bed: InstallBed, row: kh.Row, argv: tuple[str, ...], port: int, revisions: kh.Revisions,
                     key: str | None) -> str:
    """Rerun, record the outcome in ``row``, fail on any broken invariant; returns the revision now installed."""
    revision = revisions.second if row.scenario == kh.UPGRADE else revisions.first
    _rerun(bed, row, argv, port, revision, key)
    assert row.rerun_exit == 0 and not row.problems, "\n".join(row.problems)
    return revision


def _rerun(bed: InstallBed, row: kh.Row, argv: tuple[str, ...], port: int, revision: str,
           key: str | None) -> None:
    bed.hub.clear_log()
    rerun, row.rerun_seconds = kh.timed(lambda: bed.install(*argv))
    row.rerun_exit = rerun.returncode
    bed.hub.wait_idle()
    row.rerun_model_bytes = bed.hub.bytes_served(MODEL_FILE)
    if rerun.returncode != 0:
        row.problems.append(f"rerun exit {rerun.returncode}: {rerun.stderr.strip()[-600:]}")
        return
    row.problems += kh.check_home(bed, port, revision)
    if key is not None and bed.home.api_key_file.read_text(encoding="utf-8") != key:
        row.problems.append("the upgrade changed the API key")
    row.invariants_ok = not row.problems


@pytest.mark.parametrize(("scenario", "point"), _cases())
def test_kill_at_checkpoint_then_rerun(scenario: str, point: str, hub: LoopbackHub, engine_asset: Path,
                                       tmp_path: Path, request: pytest.FixtureRequest) -> None:
    venv = point in VENV_POINTS
    wheels = request.getfixturevalue("wheelhouse") if venv else None  # built on first use (venv cases only)
    bed, revisions = kh.make_bed(hub, engine_asset, tmp_path, wheels)
    port = free_port()
    argv = kh.install_args(port, venv=venv)
    row = kh.Row(scenario, point)
    try:
        key = _baseline(bed, revisions, argv, port) if scenario == kh.UPGRADE else None
        killed = kh.kill_at(bed, point, argv)
        row.killed_rc = killed.returncode
        assert killed.returncode == KILLED, (
            f"{point} never reached (exit {killed.returncode}): {killed.stderr.strip()[-1500:]}")
        if scenario == kh.UPGRADE and POINTS.index(point) < POINTS.index(kh.OLD_STOPPED):
            row.old_server_answered = kh.answers(bed.home, port)
            assert row.old_server_answered, f"the previous server stopped answering after a kill at {point}"
        want = _rerun_and_check(bed, row, argv, port, revisions, key)
        if POINTS.index(point) >= POINTS.index("fetched"):
            # Verified bytes are kept (in place, or in staging during an upgrade): the rerun may read the remote
            # header (the planner's 256 KiB range per source) but never downloads the file again.
            size = bed.hub.entry(MODEL_REPO, MODEL_FILE, want).size
            assert row.rerun_model_bytes < size, f"the rerun downloaded the model again ({row.rerun_model_bytes} B)"
    finally:
        kh.append_row(row)
        kh.stop_server(bed.home)


# Killed twice: the rerun that recovers (or redoes) the first kill's work is itself killed, then a third run.
TWICE = ((kh.UPGRADE, "swap-half", "swap-half"), (kh.UPGRADE, "swapped", "recovered"),
         (kh.UPGRADE, "started", "started"), (kh.UPGRADE, "recorded", "recovered"),
         (kh.FRESH, "engine-staged", "engine-staged"), (kh.FRESH, "started", "started"))


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "first", "second"), [pytest.param(*c, id=f"{c[0]}-{c[1]}+{c[2]}")
                                                           for c in TWICE])
def test_kill_twice_then_rerun(scenario: str, first: str, second: str, hub: LoopbackHub, engine_asset: Path,
                               tmp_path: Path) -> None:
    bed, revisions = kh.make_bed(hub, engine_asset, tmp_path)
    port = free_port()
    argv = kh.install_args(port, venv=False)
    row = kh.Row(scenario, f"{first}+{second}")
    try:
        key = _baseline(bed, revisions, argv, port) if scenario == kh.UPGRADE else None
        for point in (first, second):
            killed = kh.kill_at(bed, point, argv)
            row.killed_rc = killed.returncode
            assert killed.returncode == KILLED, (
                f"{point} never reached (exit {killed.returncode}): {killed.stderr.strip()[-1500:]}")
        _rerun_and_check(bed, row, argv, port, revisions, key)
    finally:
        kh.append_row(row)
        kh.stop_server(bed.home)


def _window(scenario: str, hub: LoopbackHub, engine_url: str, root: Path, revisions: kh.Revisions) -> float:
    """How long a normal run of ``scenario`` takes here, measured once in a scratch home on the same hub."""
    if scenario not in _windows:
        scratch = kh.bed_for(hub, engine_url, root, revisions.first, name="scratch home")
        port = free_port()
        argv = kh.install_args(port, venv=False)
        try:
            if scenario == kh.UPGRADE:
                _baseline(scratch, revisions, argv, port)
            run, seconds = kh.timed(lambda: scratch.install(*argv))
            assert run.returncode == 0, run.stderr[-2000:]
            _windows[scenario] = seconds
        finally:
            kh.stop_server(scratch.home)
    return _windows[scenario]


@pytest.mark.parametrize("seed", _random_cases())
def test_kill_at_random_time_then_rerun(seed: int, hub: LoopbackHub, engine_asset: Path, tmp_path: Path) -> None:
    scenario = kh.FRESH if seed % 2 else kh.UPGRADE
    bed, revisions = kh.make_bed(hub, engine_asset, tmp_path)
    delay = kh.random_delay(seed, _window(scenario, hub, bed.engine_url, tmp_path, revisions))
    print(f"seed {seed}: {scenario}, SIGKILL after {delay} s")
    port = free_port()
    argv = kh.install_args(port, venv=False)
    row = kh.Row(scenario, f"random:{seed}@{delay}s")
    try:
        key = _baseline(bed, revisions, argv, port) if scenario == kh.UPGRADE else None
        # 0: the run finished before the kill (the rerun is then a no-op); anything else is a failed install
        row.killed_rc = kh.kill_after(bed, argv, delay)
        assert row.killed_rc in (0, KILLED), f"the interrupted run failed on its own: exit {row.killed_rc}"
        _rerun_and_check(bed, row, argv, port, revisions, key)
    finally:
        kh.append_row(row)
        kh.stop_server(bed.home)


def test_the_check_sees_each_kind_of_damage(hub: LoopbackHub, engine_asset: Path, tmp_path: Path) -> None:
    """The invariant check is what every case relies on: a clean install passes it, and each leftover or corruption
    a killed run could leave is reported."""
    bed, revisions = kh.make_bed(hub, engine_asset, tmp_path)
    port = free_port()
    try:
        assert bed.install(*kh.install_args(port, venv=False)).returncode == 0
        assert kh.check_home(bed, port, revisions.first) == []
        assert any("revision" in p for p in kh.check_home(bed, port, revisions.second))
        home = bed.home
        damage = {
            home.root / "cache" / "swap.json": "swap.json",
            home.root / "cache" / "previous" / "x" / "old.gguf": "cache/previous",
            home.staging_dir / "files" / "x" / "new.gguf": "staging",
            home.models_dir / ".half.gguf.tmp": "temp files",
            home.models_dir / "stray.gguf": "not in state.json",
            home.engines_dir / "b1-old" / "llama-server": "engine/",
        }
        for path, words in damage.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"x")
            problems = kh.check_home(bed, port, revisions.first)
            assert any(words in p for p in problems), (path, problems)
            path.unlink()
        model = next(home.models_dir.rglob("*.gguf"))
        server = next(home.engines_dir.rglob("llama-server"))
        orphan = subprocess.Popen([str(server), "-m", str(model), "--port", str(free_port()), "-c", "512", "-t", "1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            assert any("llama-server processes" in p for p in kh.check_home(bed, port, revisions.first))
        finally:
            orphan.kill()
            orphan.wait()
        data = bytearray(model.read_bytes())
        data[-1] ^= 0xFF
        model.write_bytes(bytes(data))
        assert any("sha256 on disk" in p for p in kh.check_home(bed, port, revisions.first))
    finally:
        kh.stop_server(bed.home)
