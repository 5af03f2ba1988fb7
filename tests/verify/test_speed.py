"""The speed measurement at verify and the A/B of speculative decoding, against the test bed's real llama-server
(Gemma 3 270M Q4_K_M started from a real LaunchSpec's argv, as the start script runs it); the contention probe
only where the machine cannot provide the case (NVML: a stand-in for pynvml's functions; the CPU: recorded
readings)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import requests

from bootstrap.core.console import t
from bootstrap.core.errors import ServerError
from bootstrap.detect.probes.contention import ContentionReadings
from bootstrap.fetch.http_session import local_session
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.verify import speed as speed_mod
from bootstrap.verify.chat import wait_healthy
from bootstrap.verify.speculation import (
    RUNS_PER_ARM,
    compare_speculation,
    speculation_flags,
    speculation_wins,
    without_speculation,
)
from bootstrap.verify.speed import DECODE_TOKENS, PROMPT_TOKENS, measure_speed
from bootstrap.verify.speed_check import check_speed, speed_lines, verdict
from bootstrap.verify.speed_records import SpeedCheck, SpeedSample
from tests.support.llama import end_process, free_port

KEY = "sk-qwenkit-test-0123456789abcdefghijklmnopqrstuvwxyzABCDEFG"
GEMMA_ARGS = ("-c", "1024", "-np", "1", "-t", "2", "--no-jinja", "--chat-template", "gemma")
NGRAM = ("--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "3")

pytestmark = pytest.mark.usefixtures("english")


def _spec(home: Path, engine_bin_dir: Path, model: Path, args: tuple[str, ...]) -> LaunchSpec:
    key_file = home / "secrets" / "api-key"
    key_file.parent.mkdir(parents=True, exist_ok=True)
    key_file.write_text(KEY + "\n", encoding="utf-8")
    return LaunchSpec(home=home, system="Linux", engine_dir=engine_bin_dir, server=engine_bin_dir / "llama-server",
                      model=model, mmproj=None, args=args, alias="gemma", api_key_file=key_file, port=free_port())


class _Server:
    """The server as the start script runs it (the spec's argv, no shell); ``restart`` switches to another spec."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.proc: subprocess.Popen[bytes] | None = None
        self.argvs: list[list[str]] = []

    def start(self, spec: LaunchSpec) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_ARG_") and k != "LLAMA_API_KEY"}
        argv = [*spec.argv(), "--log-colors", "off"]
        log = self.log_dir / f"server-{len(self.argvs)}.log"
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=env)
        self.argvs.append(argv)
        wait_healthy(spec.base_url, timeout=120, process=self.proc, log_path=log)

    def stop(self) -> None:
        if self.proc is not None:
            end_process(self.proc)

    def restart(self, spec: LaunchSpec) -> None:
        self.stop()
        self.start(spec)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[_Server]:
    running = _Server(tmp_path)
    try:
        yield running
    finally:
        running.stop()


def test_speculation_flags_found_and_removed_with_their_values() -> None:
    args = ("-c", "4096", "--spec-type", "draft-mtp", "--spec-draft-n-max", "2", "-ngl", "99",
            "--spec-draft-p-min=0.75", "--spec-draft-cpu-moe", "-t", "4", "-md", "draft.gguf", "--jinja")
    assert speculation_flags(args) == ("--spec-type", "draft-mtp", "--spec-draft-n-max", "2",
                                       "--spec-draft-p-min=0.75", "--spec-draft-cpu-moe", "-md", "draft.gguf")
    # the switch --spec-draft-cpu-moe does not swallow "-t"; a negative number is a value, not a flag
    assert without_speculation(args) == ("-c", "4096", "-ngl", "99", "-t", "4", "--jinja")
    assert without_speculation(("--spec-draft-n-min", "-1", "-c", "8")) == ("-c", "8")
    # tuning flags alone, or an explicit "none", do not speculate: nothing to compare
    assert speculation_flags(("-c", "4096", "--spec-draft-n-max", "2")) == ()
    assert speculation_flags(("--spec-type", "none")) == ()
    assert speculation_flags(("--spec-default",)) == ("--spec-default",)


def test_measurement_is_the_fixed_request_with_the_servers_own_timings(
        tmp_path: Path, engine_bin_dir: Path, gemma_gguf: Path, server: _Server) -> None:
    spec = _spec(tmp_path, engine_bin_dir, gemma_gguf, GEMMA_ARGS)
    server.start(spec)
    sample = measure_speed(spec.base_url, KEY, runs=2)
    assert (sample.prompt_n, sample.decode_n, sample.runs) == (PROMPT_TOKENS, DECODE_TOKENS, 2)
    assert sample.prompt_tps > 0 and sample.decode_tps > 0
    assert sample.draft_n is None and sample.acceptance is None  # no speculation: llama-server sends no draft_n

    # The same request twice processes the whole prompt twice: cache_prompt false reached the server (with the
    # default, true, the second run would reuse all but the last prompt token from the slot's cache).
    headers = {"Authorization": f"Bearer {KEY}"}
    with local_session() as session:
        tokens = speed_mod._prompt_tokens(session, spec.base_url, headers, 60)
        timings = [speed_mod._complete(session, spec.base_url, headers, tokens, 2, 60) for _ in range(2)]
        # the prompt's token ids, read back through the server's own tokenizer, are the fixed count again
        text = session.post(f"{spec.base_url}/detokenize", json={"tokens": tokens}, headers=headers,
                            timeout=60).json()["content"]
        again = session.post(f"{spec.base_url}/tokenize", json={"content": text, "add_special": False},
                             headers=headers, timeout=60).json()["tokens"]
    assert [x["cache_n"] for x in timings] == [0, 0]
    assert [x["prompt_n"] for x in timings] == [PROMPT_TOKENS, PROMPT_TOKENS]
    assert len(tokens) == PROMPT_TOKENS and again == tokens

    # A wrong key is an exit-6 ServerError with the server's words, not a traceback.
    with pytest.raises(ServerError) as caught:
        measure_speed(spec.base_url, "sk-wrong")
    assert "401" in caught.value.message


def test_ab_of_speculation_runs_both_arms_on_the_real_engine_and_keeps_the_faster(
        tmp_path: Path, engine_bin_dir: Path, gemma_gguf: Path, server: _Server) -> None:
    spec = _spec(tmp_path, engine_bin_dir, gemma_gguf, (*GEMMA_ARGS, *NGRAM))
    server.start(spec)
    outcome = compare_speculation(spec, KEY, server.restart)
    assert outcome is not None
    trial = outcome.trial
    assert trial.flags == NGRAM
    assert trial.on.runs == trial.off.runs == RUNS_PER_ARM
    assert trial.off.draft_n is None  # the "off" server really ran without speculation
    assert trial.kept == ("on" if speculation_wins(trial.on, trial.off) else "off")
    # what runs now is the kept arm: its argv, and the spec handed back for the scripts and state.json
    running = server.argvs[-1]
    if trial.kept == "off":
        assert len(server.argvs) == 2 and outcome.spec.args == GEMMA_ARGS
        assert not any(a.startswith("--spec-") for a in running)
    else:
        assert len(server.argvs) == 3 and outcome.spec == spec
        assert "--spec-type" in running
    assert requests.get(f"{spec.base_url}/health", timeout=10).status_code == 200
    # no speculation flags: no A/B, no restart
    assert compare_speculation(replace(spec, args=GEMMA_ARGS), KEY, server.restart) is None


BUSY = ContentionReadings(cpu_percent=92.0, cpu_mhz=2900.0, cpu_max_mhz=3000.0)


def test_a_measurement_far_below_the_prediction_warns_with_the_likely_cause(
        tmp_path: Path, engine_bin_dir: Path, gemma_gguf: Path, server: _Server) -> None:
    spec = _spec(tmp_path, engine_bin_dir, gemma_gguf, GEMMA_ARGS)
    server.start(spec)
    far_above = {"decode_tps": 5000.0, "decode_low": 4000.0, "decode_high": 6000.0, "prompt_tps": 90000.0,
                 "prompt_low": 80000.0, "prompt_high": 99000.0, "context_fill": 0.5, "inputs": {"why": "test"}}
    seen: list[object] = []

    def contention(clock: tuple[float | None, float | None]) -> ContentionReadings:
        seen.append(clock)
        return BUSY

    checked = check_speed(spec, KEY, far_above, server.restart, contention=contention)
    check = checked.check
    assert check.verdict == "slow" and check.causes == ("cpu_busy",) and len(seen) == 1
    assert checked.spec == spec and check.speculation is None and len(server.argvs) == 1
    assert check.predicted == far_above  # kept as given, keys the check does not read included
    lines, warnings = speed_lines(check)
    assert "estimated about 5000 (4000-6000)" in lines[0] and "measured" in lines[0]
    assert len(warnings) == 1 and "far below the predicted 4000" in warnings[0]
    assert t("speed.cause_cpu_busy") in warnings[0]

    # A prediction the measurement meets is not probed at all.
    modest = {**far_above, "decode_tps": 0.02, "decode_low": 0.01, "decode_high": 0.03}
    ok = check_speed(spec, KEY, modest, server.restart, contention=contention).check
    assert ok.verdict == "ok" and ok.causes == () and len(seen) == 1
    assert speed_lines(ok)[1] == []


def test_verdict_margin_is_below_three_quarters_of_the_low_end() -> None:
    predicted = {"decode_tps": 40.0, "decode_low": 32.0, "decode_high": 48.0, "prompt_tps": 400.0,
                 "prompt_low": 300.0, "prompt_high": 500.0}
    sample = SpeedSample(prompt_tps=350.0, decode_tps=24.1, prompt_n=128, decode_n=32)
    assert verdict(sample, predicted) == "ok"  # 24.1 ≥ 0.75 × 32 = 24
    assert verdict(replace(sample, decode_tps=23.9), predicted) == "slow"
    assert verdict(sample, None) == "unpredicted"
    assert verdict(sample, {"decode_tps": 40.0}) == "unpredicted"  # no range: nothing to judge against
    lines, warnings = speed_lines(SpeedCheck(sample, predicted, verdict(sample, predicted)))
    assert "measured 24.1 tokens/s, estimated about 40.0 (32.0-48.0)" in lines[0] and warnings == []



def test_a_speculating_server_that_fails_the_measurement_is_turned_off(
        tmp_path: Path, engine_bin_dir: Path, gemma_gguf: Path, server: _Server) -> None:
    """The "on" arm answers nothing (here: nothing listens where it should; in the field, a speculation bug that
    the short chat proof did not hit): the A/B keeps the server without speculation and says why."""
    spec = _spec(tmp_path, engine_bin_dir, gemma_gguf, (*GEMMA_ARGS, *NGRAM))
    outcome = compare_speculation(spec, KEY, server.restart)
    assert outcome is not None and outcome.trial.kept == "off" and outcome.trial.on is None
    assert outcome.trial.on_error and "/tokenize" in outcome.trial.on_error
    assert outcome.spec.args == GEMMA_ARGS and len(server.argvs) == 1  # started once: the "off" arm
    assert outcome.trial.off.decode_n == DECODE_TOKENS
    check = SpeedCheck(outcome.trial.off, None, "unpredicted", speculation=outcome.trial)
    lines, _ = speed_lines(check)
    assert "failed the measurement" in lines[2] and "turned off" in lines[2]


def test_a_failed_plain_measurement_is_a_warning_not_a_failed_install(tmp_path: Path, engine_bin_dir: Path,
                                                                      gemma_gguf: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path, engine_bin_dir, gemma_gguf, GEMMA_ARGS)  # nothing listens on its port
    checked = check_speed(spec, KEY, None, lambda arm: pytest.fail("no restart without speculation"), timeout=5)
    assert checked.check is None and checked.spec == spec
    assert "the speed could not be measured" in capsys.readouterr().err


def test_draft_statistics_of_a_speculating_server_are_read(tmp_path: Path, engine_bin_dir: Path, gemma_gguf: Path,
                                                           server: _Server) -> None:
    """b11434 adds ``draft_n`` / ``draft_n_accepted`` to ``timings`` only when speculation drafted: a counting
    prompt makes n-gram speculation draft (greedy), and the sample carries the acceptance rate."""
    spec = _spec(tmp_path, engine_bin_dir, gemma_gguf, (*GEMMA_ARGS, *NGRAM))
    server.start(spec)
    headers = {"Authorization": f"Bearer {KEY}"}
    with local_session() as session:
        text = (" ".join(map(str, range(1, 11))) + " ") * 4
        counting = session.post(f"{spec.base_url}/tokenize", json={"content": text, "add_special": False},
                                headers=headers, timeout=60).json()["tokens"]
        body = {"prompt": counting, "n_predict": 16, "cache_prompt": False, "temperature": 0}
        timings = session.post(f"{spec.base_url}/completion", json=body, headers=headers, timeout=120).json()["timings"]
    sample = speed_mod._best([timings])
    assert sample.draft_n is not None and sample.draft_n > 0
    assert sample.draft_accepted is not None and 0 <= sample.draft_accepted <= sample.draft_n
    assert sample.acceptance == sample.draft_accepted / sample.draft_n


def test_speculation_is_kept_only_when_clearly_faster_with_drafts_accepted() -> None:
    off = SpeedSample(prompt_tps=100.0, decode_tps=20.0, prompt_n=64, decode_n=16)

    def on(tps: float, drafted: int | None, accepted: int | None) -> SpeedSample:
        return SpeedSample(100.0, tps, 64, 16, draft_n=drafted, draft_accepted=accepted)

    assert speculation_wins(on(26.0, 20, 15), off)  # +30 % at 75 % accepted: the upstream MTP reports
    assert not speculation_wins(on(26.0, 750, 1), off)  # "faster" with almost nothing accepted: noise
    assert not speculation_wins(on(26.0, None, None), off)  # nothing drafted: speculation did nothing here
    assert not speculation_wins(on(20.5, 20, 15), off)  # within the margin: the simpler server
    assert not speculation_wins(on(15.0, 20, 15), off)  # accepted, and still slower (an MTP head on the CPU)
