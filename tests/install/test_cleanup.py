"""Cleanup after a committed install: only the previous install's leftovers inside the home's ``models/`` and
``engine/`` go (never a user's own ``.gguf``, never through a link), empty repo folders go with them, a rerun after
a kill finishes the rest, and ``after_success`` also clears the journal, the backups, unused staging and the
partials of files now complete — keeping partials that a later run could still resume.

Real files in a real home under pytest's tmp dir.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path

import pytest

from bootstrap.core.home import Home
from bootstrap.install import cleanup, file_swap
from bootstrap.record.state import InstallState, relative_to_home
from tests.support.install_records import file_record, install_state, place_engine

OLD_SHA = hashlib.sha256(b"old").hexdigest()
NEW_SHA = hashlib.sha256(b"new").hexdigest()
MMPROJ_SHA = hashlib.sha256(b"mmproj").hexdigest()


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "home dir")


def write(path: Path, data: bytes = b"GGUF") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def previous_install(home: Home, *extra: Path) -> tuple[InstallState, Path, Path, Path]:
    """An old install: a model and an mmproj in one repo folder, an old engine; plus any ``extra`` files it used."""
    model = write(home.models_dir / "acme" / "old-GGUF" / "old-Q4.gguf", b"old")
    mmproj = write(home.models_dir / "acme" / "old-GGUF" / "mmproj-F16.gguf", b"mmproj")
    engine = place_engine(home, build=100)
    records = [file_record(home, model, OLD_SHA), file_record(home, mmproj, MMPROJ_SHA, role="mmproj")]
    records += [file_record(home, p, hashlib.sha256(p.read_bytes()).hexdigest(), role="shard") for p in extra]
    state = install_state(home, engine, records, model="old", model_id="old", quant="Q4", build=100)
    return state, model, mmproj, engine


def test_obsolete_lists_what_the_new_install_does_not_use(home: Home) -> None:
    """A file the new install keeps (the shared mmproj) stays; the old model and the old engine folder go."""
    state, model, mmproj, old_engine = previous_install(home)
    new_engine = place_engine(home)
    new_model = write(home.models_dir / "acme" / "new-GGUF" / "new-Q4.gguf", b"new")
    assert cleanup.obsolete_paths(home, state, [new_model, mmproj], new_engine) == [model, old_engine]


def test_an_unchanged_engine_is_never_obsolete(home: Home) -> None:
    state, model, mmproj, old_engine = previous_install(home)
    assert cleanup.obsolete_paths(home, state, [model, mmproj], old_engine) == []


def test_files_outside_the_home_are_never_obsolete(home: Home, tmp_path: Path) -> None:
    """A local ``.gguf`` the user pointed at is recorded by absolute path: switching models never deletes it, and
    an engine recorded outside ``engine/`` is not ours to delete either."""
    own = write(tmp_path / "Downloads" / "my-model.gguf")
    state, model, mmproj, _ = previous_install(home, own)
    foreign_engine = tmp_path / "llama.cpp" / "build"
    foreign_engine.mkdir(parents=True)
    state = replace(state, engine=replace(state.engine, dir=str(foreign_engine)))
    new_engine = place_engine(home)
    assert cleanup.obsolete_paths(home, state, [], new_engine) == [model, mmproj]
    assert relative_to_home(home, own) == str(own)  # how it was recorded: absolute


def test_remove_deletes_files_engines_and_empty_repo_folders_only(home: Home) -> None:
    """The repo folder left empty goes (up to, not including, ``models/``); a folder still holding a file stays."""
    _, model, mmproj, old_engine = previous_install(home)
    new_engine = place_engine(home)
    keep = write(home.models_dir / "acme" / "new-GGUF" / "new.gguf", b"new")
    removed = cleanup.remove_obsolete(home, [model, mmproj, old_engine])
    assert removed == [model, mmproj, old_engine]
    assert not (home.models_dir / "acme" / "old-GGUF").exists()
    assert keep.is_file() and (home.models_dir / "acme").is_dir()
    assert new_engine.is_dir() and not old_engine.exists()

    keep.unlink()
    lone = write(home.models_dir / "solo.gguf")
    assert cleanup.remove_obsolete(home, [lone]) == [lone]
    assert home.models_dir.is_dir()  # the models folder itself is never removed


def test_remove_skips_what_is_gone_or_not_ours(home: Home, tmp_path: Path) -> None:
    """A second run after a kill finds some paths already gone: skipped, not an error; a path outside ``models/``
    and ``engine/`` (the state file, a user's file) is never touched, whatever the list says."""
    outside = write(tmp_path / "elsewhere" / "precious.gguf")
    state_file = write(home.state_file, b"{}")
    file_in_engines = write(home.engines_dir / "stray.txt")
    listed = [home.models_dir / "acme" / "gone.gguf", home.engines_dir / "b1-gone", outside, state_file,
              file_in_engines, home.models_dir]
    assert cleanup.remove_obsolete(home, listed) == []
    assert outside.is_file() and state_file.is_file() and file_in_engines.is_file()


def test_links_are_removed_never_followed(home: Home, tmp_path: Path) -> None:
    """A model link is unlinked (its target stays); an engine "folder" that is a link to elsewhere is left alone,
    so ``rmtree`` can never walk out of the home."""
    target_file = write(tmp_path / "elsewhere" / "big.gguf")
    target_dir = tmp_path / "elsewhere" / "engine"
    write(target_dir / "llama-server")
    link_file = home.models_dir / "acme" / "link.gguf"
    link_file.parent.mkdir(parents=True)
    link_file.symlink_to(target_file)
    dangling = home.models_dir / "acme" / "dangling.gguf"
    dangling.symlink_to(tmp_path / "nothing-here")
    home.engines_dir.mkdir(parents=True)
    link_dir = home.engines_dir / "b1-linked"
    link_dir.symlink_to(target_dir, target_is_directory=True)
    assert cleanup.remove_obsolete(home, [link_file, dangling, link_dir]) == [link_file, dangling]
    assert not link_file.is_symlink() and not dangling.is_symlink()
    assert target_file.is_file() and (target_dir / "llama-server").is_file() and link_dir.is_symlink()


def test_a_recorded_path_climbing_out_of_the_home_is_never_deleted(home: Home, tmp_path: Path) -> None:
    """``state.json`` stores paths as text; one holding ``..`` (a damaged or hand-edited record) must not make
    cleanup delete outside the home: ``models/../../victim.gguf`` (an unlink) and an engine dir
    ``engine/../../victim-dir`` (an ``rmtree``) are both outside once ``..`` is resolved, and are left alone."""
    state, _, _, _ = previous_install(home)
    victim = write(tmp_path / "victim.gguf")
    victim_dir = tmp_path / "victim-dir"
    write(victim_dir / "notes.txt")
    climbing = replace(state.files[0], path="models/../../victim.gguf")
    state = replace(state, files=(climbing,), engine=replace(state.engine, dir="engine/../../victim-dir"))
    obsolete = cleanup.obsolete_paths(home, state, [], place_engine(home))
    cleanup.remove_obsolete(home, obsolete)
    assert victim.is_file() and (victim_dir / "notes.txt").is_file()


def test_after_success_finishes_the_upgrade(home: Home) -> None:
    """With the journal: the obsolete files, the journal, the backups, the unused staging and the partials of the
    files now installed all go; a partial of another file (another download, resumable later) stays."""
    _, model, _, old_engine = previous_install(home)
    new_engine = place_engine(home)
    new_model = write(home.models_dir / "acme" / "new-GGUF" / "new.gguf", b"new")
    current = install_state(home, new_engine, [file_record(home, new_model, NEW_SHA)], model="new", model_id="new",
                            quant="Q4")
    journal = file_swap.Journal(moves=(), obsolete=(model, old_engine), new_files=(), new_engine="")
    file_swap.journal_path(home).parent.mkdir(parents=True, exist_ok=True)  # the run's downloads made cache/
    file_swap.begin(home, journal)
    backup = write(file_swap.backup_dir(home) / OLD_SHA / "old-Q4.gguf")
    staged = write(file_swap.staged_path(home, "f" * 64, "abandoned.gguf"))
    done_part = write(home.partial_dir / f"{NEW_SHA}.part")
    done_json = write(home.partial_dir / f"{NEW_SHA}.json")
    other_part = write(home.partial_dir / f"{OLD_SHA}.part")
    odd = write(home.partial_dir / f"{NEW_SHA}.tmp")

    removed = cleanup.after_success(home, current, file_swap.read_journal(home))
    assert set(removed) == {model, old_engine, done_part, done_json}
    assert not file_swap.journal_path(home).exists() and not backup.exists() and not staged.exists()
    assert other_part.is_file() and odd.is_file()
    assert new_model.is_file() and new_engine.is_dir()


def test_after_success_without_a_journal_deletes_no_install_file(home: Home) -> None:
    """A first install (no journal): nothing of an install is listed, only the finished partials go; twice is the
    same as once."""
    previous, model, mmproj, engine = previous_install(home)
    part = write(home.partial_dir / f"{OLD_SHA}.part")
    assert cleanup.after_success(home, previous, None) == [part]
    assert cleanup.after_success(home, previous, None) == []
    assert model.is_file() and mmproj.is_file() and engine.is_dir()


def test_after_success_removes_chat_templates_no_model_is_served_with(home: Home) -> None:
    """An upgrade writes its model's derived template beside the previous one's (``place/chat_template.py``); once
    committed, the ones no model names go, the default's and another model's stay."""
    from bootstrap.record.state import ChatTemplateRecord, LibraryModel

    previous, *_ = previous_install(home)
    names = {n: write(home.chat_templates_dir / f"qwen3.5-{n}.jinja") for n in ("new", "old", "other")}
    stray = write(home.chat_templates_dir / "notes.txt")

    def record(name: str) -> ChatTemplateRecord:
        return ChatTemplateRecord(relative_to_home(home, names[name]), "qwen3.5", ("merge-leading-system",), "00")

    other = LibraryModel("other", "other", "Q4", "chat", previous.files[:1], (), "other", chat_template=record("other"))
    current = replace(previous, server=replace(previous.server, chat_template=record("new")), library=(other,))
    assert cleanup.after_success(home, current, None) == [names["old"]]
    assert names["new"].is_file() and names["other"].is_file() and stray.is_file()
