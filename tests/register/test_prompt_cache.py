"""The prompt cache's pieces without a server: slot file reading, the trim point, the budget, the key.

The real server's files, saves and restores are in tests/e2e/test_prompt_cache.py; here, the edges a server rarely
makes: files cut short at each boundary, a foreign format, a budget smaller than one file.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from bootstrap.plan.prompt_cache import BUDGET_FILE, cache_dir, cache_key, disk_budget_mib
from bootstrap.register import prompt_cache, slot_files


def slot_bytes(tokens: list[int], state: bytes = b"\x01" * 64, packed: bool = True) -> bytes:
    """A slot file as b11434's server writes one (module docstring of slot_files)."""
    words = [-1, 1, len(tokens), *tokens, 0] if packed else list(tokens)
    return struct.pack("<III", slot_files.MAGIC, slot_files.VERSION, len(words)) + struct.pack(
        f"<{len(words)}i", *words) + state


def test_tokens_read_from_both_token_list_formats(tmp_path: Path) -> None:
    path = tmp_path / "slot0.slot"
    path.write_bytes(slot_bytes([5, 6, 7]))
    assert slot_files.read_tokens(path) == (5, 6, 7)
    path.write_bytes(slot_bytes([9, 8], packed=False))
    assert slot_files.read_tokens(path) == (9, 8)


@pytest.mark.parametrize("cut", [0, 5, 11, 12, 20, 40])
def test_a_file_cut_short_anywhere_before_its_state_is_refused(tmp_path: Path, cut: int) -> None:
    data = slot_bytes([5, 6, 7, 8])
    path = tmp_path / "slot0.slot"
    path.write_bytes(data[:cut])
    with pytest.raises(slot_files.BadSlotFile):
        slot_files.read_tokens(path)


def test_another_format_is_refused_and_listed_as_bad(tmp_path: Path) -> None:
    (tmp_path / "slot0.slot").write_bytes(b"GGUF" + b"\0" * 100)
    (tmp_path / "slot1.slot").write_bytes(slot_bytes([1, 2]))
    (tmp_path / "notes.txt").write_text("not ours")
    good, bad = slot_files.listed(tmp_path)
    assert [f.slot for f in good] == [1]
    assert [p.name for p, _ in bad] == ["slot0.slot"] and "not a llama.cpp slot file" in bad[0][1]


def test_trim_point_is_after_the_last_marker() -> None:
    marker = (151645, 198, 151644)
    tokens = (1, 2, *marker, 3, 4, *marker, 77, 88, 99)
    assert prompt_cache.trim_point(tokens, marker) == len(tokens) - 3
    assert prompt_cache.trim_point(tokens, ()) == len(tokens)
    assert prompt_cache.trim_point((1, 2, 3), marker) == 3


def test_prune_removes_other_keys_then_the_oldest_files(tmp_path: Path) -> None:
    keep, other = tmp_path / "aaaa", tmp_path / "bbbb"
    keep.mkdir()
    other.mkdir()
    (other / "slot0.slot").write_bytes(slot_bytes([1] * 10))
    for sid, age in ((0, 300), (1, 200), (2, 100)):
        path = keep / slot_files.file_name(sid)
        path.write_bytes(slot_bytes([1] * 1000))
        os.utime(path, (1_000_000 - age, 1_000_000 - age))
    size = (keep / "slot0.slot").stat().st_size
    removed = prompt_cache.prune(tmp_path, keep, 2 * size)
    assert not other.exists()
    assert sorted(p.name for p in keep.iterdir()) == ["slot1.slot", "slot2.slot"]
    assert keep / "slot0.slot" in removed


def test_prune_keeps_every_current_model_s_folder_under_one_budget(tmp_path: Path) -> None:
    """Router mode: each model's folder stays; the budget holds over all of them, the oldest file first."""
    first, second, stale = tmp_path / "aaaa", tmp_path / "bbbb", tmp_path / "cccc"
    for folder in (first, second, stale):
        folder.mkdir()
    for folder, sid, age in ((first, 0, 300), (second, 0, 200), (first, 1, 100), (stale, 0, 50)):
        path = folder / slot_files.file_name(sid)
        path.write_bytes(slot_bytes([1] * 1000))
        os.utime(path, (1_000_000 - age, 1_000_000 - age))
    size = (first / "slot0.slot").stat().st_size
    removed = prompt_cache.prune(tmp_path, (first, second), 2 * size)
    assert not stale.exists()
    assert sorted(p.name for p in first.iterdir()) == ["slot1.slot"]
    assert sorted(p.name for p in second.iterdir()) == ["slot0.slot"]
    assert first / "slot0.slot" in removed


def test_budget_reads_the_plans_file_and_defaults_to_nothing(tmp_path: Path) -> None:
    assert prompt_cache.budget_bytes(tmp_path) == 0
    prompt_cache.write_budget(tmp_path, 512)
    assert prompt_cache.budget_bytes(tmp_path) == 512 << 20
    (tmp_path / BUDGET_FILE).write_text(json.dumps({"mib": "lots"}))
    assert prompt_cache.budget_bytes(tmp_path) == 0


def test_key_changes_with_model_engine_and_template(tmp_path: Path) -> None:
    base = cache_key("a" * 64, "b11434-ubuntu-x64", "")
    assert len({base, cache_key("b" * 64, "b11434-ubuntu-x64", ""), cache_key("a" * 64, "b11435-ubuntu-x64", ""),
                cache_key("a" * 64, "b11434-ubuntu-x64", "c" * 64)}) == 4
    template = tmp_path / "t.jinja"
    template.write_text("one")
    first = cache_dir(tmp_path, "a" * 64, "e", template)
    template.write_text("two")
    assert cache_dir(tmp_path, "a" * 64, "e", template) != first


def test_disk_budget_is_a_tenth_of_what_the_model_leaves_within_bounds() -> None:
    gib = 1 << 30
    assert disk_budget_mib(500 * gib, 20 * gib) == 4096
    assert disk_budget_mib(30 * gib, 20 * gib) == 1024
    assert disk_budget_mib(21 * gib, 20 * gib) == 0


def test_folder_of_reads_the_slot_save_path(tmp_path: Path) -> None:
    assert prompt_cache.folder_of(["llama-server", "--slot-save-path", "prompt-cache/x"], tmp_path) == (
        tmp_path / "prompt-cache" / "x")
    assert prompt_cache.folder_of(["llama-server", "-m", "m.gguf"], tmp_path) is None
