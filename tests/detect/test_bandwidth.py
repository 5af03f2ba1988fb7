"""The RAM bandwidth probe, run for real on this machine: bounded in memory and time, a positive number, and recorded
in the profile ``doctor --json`` prints."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from bootstrap.detect.probes import bandwidth, memory


def test_probe_measures_a_positive_bandwidth_within_its_bounds() -> None:
    reading = bandwidth.read_bandwidth(2)
    assert reading is not None and reading.bytes_per_s > 0 and reading.threads == 2
    assert 2 * reading.threads * reading.buffer_bytes <= bandwidth.MAX_TOTAL_BYTES
    # one round of the best is what it reports: its copying time is a share of the whole copying budget
    assert reading.seconds <= bandwidth.COPY_SECONDS


def test_a_read_stream_where_the_c_library_answers_else_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    """memcmp of two equal buffers reads both to the end: decode's access pattern. Without it, memmove still gives a
    positive figure, labelled as a copy."""
    assert bandwidth._memcmp() is not None  # glibc here
    assert bandwidth.read_bandwidth(1, copy_seconds=0.03).method == "read"
    monkeypatch.setattr(bandwidth, "_memcmp", lambda: None)
    copy = bandwidth.read_bandwidth(1, copy_seconds=0.03)
    assert copy is not None and copy.method == "copy" and copy.bytes_per_s > 0


def test_buffers_stay_above_any_cache_and_below_the_cap() -> None:
    for threads in (1, 2, 8, 64, 256):
        size = bandwidth._buffer_bytes(threads)
        assert size >= bandwidth.MIN_BUFFER_BYTES
        assert threads > 8 or 2 * threads * size <= bandwidth.MAX_TOTAL_BYTES


def test_unmeasured_readings_stay_unmeasured() -> None:
    info = memory.probe_memory(memory.MemoryReadings(total=16 << 30, available=8 << 30))
    assert info.bandwidth_bytes_per_s is None and info.bandwidth_threads is None
    info = memory.probe_memory(memory.MemoryReadings(16 << 30, 8 << 30, bandwidth=0, bandwidth_threads=4))
    assert info.bandwidth_bytes_per_s is None


def test_doctor_json_records_the_measurement() -> None:
    env = {**os.environ, "QWENKIT_LANG": "en"}
    proc = subprocess.run([sys.executable, "-m", "bootstrap", "doctor", "--json"], capture_output=True, text=True,
                          timeout=120, check=True, env=env)
    doc = json.loads(proc.stdout)
    assert doc["memory"]["bandwidth_bytes_per_s"] > 0 and doc["memory"]["bandwidth_threads"] >= 1
    [ram] = [c for c in doc["checks"] if c["id"] == "ram"]
    assert "GB/s" in ram["reason"]


def test_the_median_mode_gives_a_positive_figure() -> None:
    median = bandwidth.read_bandwidth(1, copy_seconds=0.06, rounds=3, median=True)
    assert median is not None and median.bytes_per_s > 0
