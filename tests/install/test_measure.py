"""An install measures this machine's speed with the engine it placed, before any model byte is downloaded, and
predicts from that; ``plan`` and ``doctor --json`` on the same machine keep using it; ``install --hardware`` (a
plan for another machine) measures nothing. Real parts: the loopback hub, the test bed's llama-server, a real
GGUF (``tests/support/install_bed.py``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from bootstrap.core.home import Home
from bootstrap.detect.hardware import HardwareProfile
from bootstrap.install.measure import RATES_LOG, main_types, rates_in_state
from bootstrap.record.state import load_state
from tests.support.install_bed import MODEL_FILE, InstallBed

pytestmark = pytest.mark.usefixtures("english")


def _state(home: Home) -> dict[str, object]:
    return json.loads(home.state_file.read_text(encoding="utf-8"))


def test_the_install_measures_before_the_download_and_predicts_from_it(make_bed: Callable[..., InstallBed]
                                                                        ) -> None:
    bed = make_bed()
    proc = bed.install()
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr
    assert "Measuring this machine's speed with the engine" in err and "Measured in " in err
    # the confirmation screen said it would be measured, the report says where the prediction came from
    assert "the engine measures this machine before the model download" in err
    # order: self-test, then the measurement, then the model's bytes from the hub
    log = bed.home.logs_dir / RATES_LOG
    assert "load_model" in log.read_text(errors="replace")
    assert err.index("engine runs here") < err.index("Measuring this machine's speed")  # after the self-test
    # the model's bytes: the transfer of the whole file (the planner's header reads before it are ranged and short)
    served = bed.hub.requests(file_glob=MODEL_FILE)
    whole = max(r.bytes for r in served)
    downloads = [r for r in served if r.bytes == whole]
    assert os.stat(log).st_mtime <= min(r.started for r in downloads)
    predicted = _state(bed.home)["speed"]["predicted"]  # type: ignore[index]
    assert predicted["source"] == "measured" and predicted["measured_on"]
    rates = predicted["kernel_rates"]
    assert [r["type"] for r in rates["devices"][0]["rates"]] == ["Q8_0"]  # the tiny chat model is all Q8_0
    assert rates["millis"] > 0

    # plan and doctor on this machine (same home) predict from, and carry, what the install measured
    plan = bed.run("plan", "--json")
    assert plan.returncode == 0, plan.stderr
    assert json.loads(plan.stdout)["speed"]["source"] == "measured"
    doctor = bed.run("doctor", "--json")
    assert doctor.returncode == 0, doctor.stderr
    profile = HardwareProfile.from_json(json.loads(doctor.stdout))
    assert profile.kernel_rates is not None and profile.kernel_rates.measured == predicted["measured_on"]
    # and a rerun's confirmation screen shows it before measuring again
    again = bed.install("--verify")
    assert again.returncode == 0, again.stderr
    assert "Predicted from the engine's own measurement on the machine" in again.stderr


def test_a_plan_for_another_machine_measures_nothing(make_bed: Callable[..., InstallBed], tmp_path: Path) -> None:
    bed = make_bed()
    mine = bed.run("doctor", "--json")
    assert mine.returncode == 0, mine.stderr
    profile = tmp_path / "other.json"
    profile.write_text(mine.stdout, encoding="utf-8")
    proc = bed.install("--hardware", str(profile))
    assert proc.returncode == 0, proc.stderr
    assert "Measuring this machine's speed" not in proc.stderr
    assert "Estimated from published runs on other machines" in proc.stderr
    assert _state(bed.home)["speed"]["predicted"]["source"] == "published"  # type: ignore[index]
    assert not (bed.home.logs_dir / RATES_LOG).exists()


def test_recorded_rates_of_another_cpu_or_a_damaged_copy_are_not_used(make_bed: Callable[..., InstallBed]) -> None:
    bed = make_bed()
    assert bed.install().returncode == 0
    state = load_state(bed.home)
    assert state is not None and state.speed is not None and state.speed.predicted is not None
    brand = state.speed.predicted["kernel_rates"]["cpu_brand"]
    assert rates_in_state(state, brand) is not None
    assert rates_in_state(state, "Another CPU") is None
    state.speed.predicted["kernel_rates"]["devices"] = "garbage"  # type: ignore[index]
    assert rates_in_state(state, brand) is None
    assert rates_in_state(None, brand) is None


def test_only_the_types_that_carry_the_bytes_are_measured() -> None:
    assert main_types({"Q8_0": 180, "Q4_0": 44, "Q4_K": 13, "Q6_K": 10}) == ("Q8_0", "Q4_0")
    assert main_types({"Q4_K": 50, "Q6_K": 30, "Q8_0": 20, "Q4_0": 15}, 3) == ("Q4_K", "Q6_K", "Q8_0")
    assert main_types({}) == ()
