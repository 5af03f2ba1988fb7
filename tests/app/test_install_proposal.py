"""The install confirmation screen shows the predicted tokens/s (plan/speed.py) before anything is downloaded."""

from __future__ import annotations

from pathlib import Path

import pytest

from bootstrap.app.commands.install import show_proposal
from bootstrap.catalog.models import load_catalog
from bootstrap.detect.hardware import load_profile
from bootstrap.install.installer import Proposal
from bootstrap.plan.model_facts import catalog_candidates
from bootstrap.plan.planner import choose
from tests.support.paths import TEST_DATA


@pytest.mark.usefixtures("english")
def test_the_proposal_shows_tokens_per_second(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hardware = load_profile(TEST_DATA / "hardware" / "rtx3070_8gb_32gb.json")
    plan = choose(catalog_candidates(load_catalog().model(None), None, tmp_path), hardware)
    show_proposal(Proposal(hardware=hardware, plan=plan, previous=None, download_bytes=plan.file_size,
                           changed_files=(plan.file,), reasons=()), tmp_path)
    err = capsys.readouterr().err
    assert "tokens/s" in err and f"{plan.speed.decode_tps:.0f} tokens/s" in err
    assert "Thinking" in err
