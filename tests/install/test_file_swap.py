"""The swap journal: whatever the moment of a kill, ``undo`` puts the old file back and keeps the new one staged,
and running it twice changes nothing. Real files on a real filesystem; the three states a file can be in are made by
running the two renames of ``apply`` one at a time."""

from __future__ import annotations

from pathlib import Path

import pytest

from bootstrap.core.home import Home
from bootstrap.install import file_swap


def _home(tmp_path: Path) -> tuple[Home, list[file_swap.Move]]:
    home = Home(tmp_path / "家 home")
    moves = []
    for name, old, new in (("a.gguf", b"old-a", b"new-a"), ("mmproj.gguf", b"old-m", b"new-m")):
        final = home.models_dir / "r" / name
        final.parent.mkdir(parents=True, exist_ok=True)
        final.write_bytes(old)
        move = file_swap.plan_move(home, final, f"{name}-sha")
        move.staged.parent.mkdir(parents=True, exist_ok=True)
        move.staged.write_bytes(new)
        moves.append(move)
    return home, moves


def _journal(moves: list[file_swap.Move]) -> file_swap.Journal:
    return file_swap.Journal(tuple(moves), (), tuple((str(m.final), m.sha256) for m in moves), "engine/x")


def _contents(moves: list[file_swap.Move]) -> list[tuple[bytes | None, bytes | None, bool]]:
    def read(p: Path) -> bytes | None:
        return p.read_bytes() if p.exists() else None

    return [(read(m.final), read(m.staged), m.backup.exists()) for m in moves]


@pytest.mark.parametrize("done", range(5))
def test_undo_restores_the_old_files_after_a_kill_at_any_rename(tmp_path: Path, done: int) -> None:
    home, moves = _home(tmp_path)
    file_swap.begin(home, _journal(moves))
    # Perform the first `done` renames of apply (2 per file), as a kill between them would leave things.
    steps = [(m.final, m.backup) for m in moves[:1]] + [(moves[0].staged, moves[0].final)] + \
        [(moves[1].final, moves[1].backup), (moves[1].staged, moves[1].final)]
    for src, dst in steps[:done]:
        dst.parent.mkdir(parents=True, exist_ok=True)
        src.rename(dst)
    assert file_swap.read_journal(home) == _journal(moves)
    file_swap.undo(tuple(moves))
    expected = [(b"old-a", b"new-a", False), (b"old-m", b"new-m", False)]
    assert _contents(moves) == expected
    file_swap.undo(tuple(moves))  # twice: nothing changes
    assert _contents(moves) == expected
    file_swap.discard(home)
    assert file_swap.read_journal(home) is None
    assert not file_swap.backup_dir(home).exists()
    assert all(m.staged.exists() for m in moves)  # kept: a retry does not download them again


def test_apply_is_idempotent_and_finish_drops_the_old_files(tmp_path: Path) -> None:
    home, moves = _home(tmp_path)
    file_swap.begin(home, _journal(moves))
    file_swap.apply(tuple(moves))
    file_swap.apply(tuple(moves))  # a rerun after a kill right after apply
    assert _contents(moves) == [(b"new-a", None, True), (b"new-m", None, True)]
    file_swap.finish(home)
    assert not file_swap.backup_dir(home).exists()
    assert file_swap.read_journal(home) is None
    assert [m.final.read_bytes() for m in moves] == [b"new-a", b"new-m"]


def test_discard_never_deletes_a_backup_that_was_not_restored(tmp_path: Path) -> None:
    home, moves = _home(tmp_path)
    file_swap.begin(home, _journal(moves))
    file_swap.apply(tuple(moves))
    file_swap.discard(home)  # misuse: without undo first, the old files must still survive
    assert all(m.backup.read_bytes().startswith(b"old-") for m in moves)


def test_a_damaged_journal_reads_as_none(tmp_path: Path) -> None:
    home = Home(tmp_path)
    file_swap.journal_path(home).parent.mkdir(parents=True)
    file_swap.journal_path(home).write_text("{not json", encoding="utf-8")
    assert file_swap.read_journal(home) is None
