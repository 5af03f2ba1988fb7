"""``freshness.check``: is the install in this home what a rerun would install? Answered from records and ``stat()``
without reading model bytes, asking a hub only for a branch that can move; an unreachable hub keeps the install
(an offline machine keeps working) with a note.

A real home (real files, a real engine marker, the shipped engine pins), a catalog file written per test, and the
loopback hub for the revisions that need one. A pinned install is checked with both hub endpoints pointing at a
closed port: any network use would show up as a note or a reason.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from bootstrap import __version__
from bootstrap.catalog.model_ref import wanted_model
from bootstrap.core.home import Home
from bootstrap.install.freshness import Freshness, check
from bootstrap.record.state import InstallState
from tests.support.dead_hubs import closed_port_url, point_hubs_nowhere
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import seeded_bytes
from tests.support.install_records import file_record, install_state, place_engine, write_scripts

pytestmark = pytest.mark.usefixtures("english")

REPO = "acme/tiny-GGUF"
FILE = "tiny-Q8_0.gguf"
MODEL = seeded_bytes(70_000, 31)
SHA = hashlib.sha256(MODEL).hexdigest()
COMMIT = "0123456789abcdef0123456789abcdef01234567"
OTHER_COMMIT = "fedcba9876543210fedcba9876543210fedcba98"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Shipped engine pins, no proxy, and hubs that cannot answer unless a test points them at the loopback hub."""
    point_hubs_nowhere(monkeypatch, "QWENKIT_ENGINES")


def write_catalog(path: Path, monkeypatch: pytest.MonkeyPatch, *, revision: str | None = COMMIT,
                  sha256: str | None = None, quant: str = "Q8_0", file: str = FILE, mmproj: str | None = None) -> None:
    """A one-model catalog (``tiny``) on both hubs, in force through ``QWENKIT_CATALOG``."""
    rev = f', revision = "{revision}"' if revision else ""
    digest = f', sha256 = "{sha256}"' if sha256 else ""
    extra = f'mmproj = {{ file = "{mmproj}" }}\n' if mmproj else ""
    path.write_text(f'''schema = 1
default_model = "tiny"

[[models]]
id = "tiny"
title = "Tiny"
architecture = "llama"
default_quant = "{quant}"
repos = [
  {{ hub = "hf", repo = "{REPO}"{rev} }},
  {{ hub = "modelscope", repo = "{REPO}"{rev} }},
]
quants = [ {{ name = "{quant}", file = "{file}"{digest} }} ]
{extra}''', encoding="utf-8")
    monkeypatch.setenv("QWENKIT_CATALOG", str(path))


def installed(home: Home, *, model: str = "tiny", revision: str | None = COMMIT, source: str = "hf",
              sha256: str = SHA) -> InstallState:
    """A verified install of the catalog model in ``home``: model file, engine for the pins, scripts, key."""
    path = home.models_dir / REPO / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(MODEL)
    write_scripts(home)
    record = file_record(home, path, sha256, source=source, revision=revision)
    return install_state(home, place_engine(home), [record], model=model, model_id="tiny", quant="Q8_0")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Home:
    write_catalog(tmp_path / "catalog.toml", monkeypatch)
    return Home(tmp_path / "home")


def test_an_unchanged_pinned_install_is_up_to_date_without_the_network(home: Home) -> None:
    """Same request, kit, engine, files and commit pin: a rerun stops here, and no hub was asked (both are dead)."""
    state = installed(home)
    assert check(home, state, wanted_model(None, "tiny"), "auto") == Freshness(True, (), ())


def test_another_model_is_a_change(home: Home) -> None:
    state = installed(home)
    fresh = check(home, state, wanted_model("tiny:Q8_0", "tiny"), "auto")
    assert not fresh.up_to_date and fresh.reasons == ("the model changes from tiny to tiny:Q8_0",)
    no_request = replace(state, request=None)  # a record from before requests were kept: named by its model id
    assert check(home, no_request, wanted_model(None, "tiny"), "auto").reasons == (
        "the model changes from tiny to tiny",)


def test_another_thinking_default_is_a_change(home: Home) -> None:
    state = installed(home)
    assert check(home, state, wanted_model(None, "tiny"), "auto", True).reasons == (
        "thinking by default changes from the catalog's default to on",)
    assert state.request is not None
    thinking_on = replace(state, request=replace(state.request, thinking=True))
    assert check(home, thinking_on, wanted_model(None, "tiny"), "auto", True).up_to_date
    assert check(home, thinking_on, wanted_model(None, "tiny"), "auto", False).reasons == (
        "thinking by default changes from on to off",)


def test_a_new_kit_version_is_a_change(home: Home) -> None:
    state = replace(installed(home), kit_version="0.0.1")
    assert check(home, state, wanted_model(None, "tiny"), "auto").reasons == (
        f"QwenClientKit was updated (0.0.1 -> {__version__})",)


def test_an_engine_not_matching_the_pins_is_a_change(home: Home) -> None:
    """The recorded build is not the pinned one (new pins), or the pinned engine folder lost its marker."""
    state = installed(home)
    old = replace(state, engine=replace(state.engine, build=100))
    assert check(home, old, wanted_model(None, "tiny"), "auto").reasons == (
        "the pinned llama.cpp engine is not the installed one (b100)",)
    (home.root / state.engine.dir / ".qwenkit-engine.json").unlink()
    assert len(check(home, state, wanted_model(None, "tiny"), "auto").reasons) == 1


def test_a_missing_server_binary_is_a_change(home: Home) -> None:
    state = installed(home)
    (home.root / state.engine.server).unlink()
    assert not check(home, state, wanted_model(None, "tiny"), "auto").up_to_date


@pytest.mark.parametrize("how", ["deleted", "rewritten", "replaced", "touched", "no_identity"])
def test_a_file_that_is_not_as_verified_is_a_change(home: Home, how: str) -> None:
    """Size, mtime and inode as recorded, or the file is not trusted: a copy with the same bytes and the same
    mtime but a new inode (restored from a backup) is hashed again, as is a record without the stat identity."""
    state = installed(home)
    path = home.models_dir / REPO / FILE
    st = path.stat()
    if how == "deleted":
        path.unlink()
    elif how == "rewritten":  # same size, other bytes, same mtime: the inode stays, so only mtime could tell
        path.write_bytes(bytes(b ^ 1 for b in MODEL))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    elif how == "replaced":
        copy = path.with_name("copy")
        shutil.copyfile(path, copy)
        os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))
        path.unlink()
        copy.rename(path)
        assert path.stat().st_ino != st.st_ino and path.stat().st_mtime_ns == st.st_mtime_ns
    elif how == "touched":
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    else:
        state = replace(state, files=(replace(state.files[0], mtime_ns=None, inode=None),))
    assert check(home, state, wanted_model(None, "tiny"), "auto").reasons == (
        f"models/{REPO}/{FILE} is missing or changed on disk",)


@pytest.mark.parametrize("which", ["run_sh", "api_key_file"])
def test_a_missing_start_script_or_key_is_a_change(home: Home, which: str) -> None:
    state = installed(home)
    getattr(home, which).unlink()
    assert check(home, state, wanted_model(None, "tiny"), "auto").reasons == (
        "the start script or the API key file is missing",)


def test_a_missing_chat_template_is_a_change(home: Home) -> None:
    """The kit's chat template the server starts with (``place/chat_template.py``): gone, the rerun places it again
    instead of starting a server whose script refuses to run; present, nothing to do."""
    from bootstrap.record.state import ChatTemplateRecord

    template = home.chat_templates_dir / "qwen3.5-0123456789abcdef.jinja"
    template.parent.mkdir(parents=True)
    template.write_text("{{ messages }}", encoding="utf-8")
    base = installed(home)
    record = ChatTemplateRecord("chat-templates/qwen3.5-0123456789abcdef.jinja", "qwen3.5", ("merge-leading-system",),
                                "00" * 32)
    state = replace(base, server=replace(base.server, chat_template=record))
    assert check(home, state, wanted_model(None, "tiny"), "auto").up_to_date
    template.unlink()
    assert check(home, state, wanted_model(None, "tiny"), "auto").reasons == (
        "the chat template the server starts with is missing (chat-templates/qwen3.5-0123456789abcdef.jinja)",)


def test_every_reason_is_listed_and_the_revision_check_is_skipped(home: Home, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Several changes at once are all reported; with anything changed, no hub check runs (the catalog now follows
    a branch and both hubs are dead, so a check would have left a note)."""
    state = replace(installed(home), kit_version="0.0.1")
    home.run_sh.unlink()
    (home.models_dir / REPO / FILE).unlink()
    write_catalog(tmp_path / "catalog.toml", monkeypatch, revision="main")
    fresh = check(home, state, wanted_model(None, "tiny"), "auto")
    assert len(fresh.reasons) == 3 and fresh.notes == ()


def test_a_moved_commit_pin_is_a_new_revision(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog now pins another commit than the one the file was fetched at."""
    state = installed(home)
    write_catalog(tmp_path / "catalog.toml", monkeypatch, revision=OTHER_COMMIT)
    assert check(home, state, wanted_model(None, "tiny"), "auto").reasons == (f"a new revision of {FILE}",)


def test_a_record_without_a_revision_under_a_commit_pin_is_trusted(home: Home) -> None:
    """No recorded revision (a bundle install) against a commit pin: nothing says it moved, and no hub is asked."""
    state = installed(home, revision=None)
    assert check(home, state, wanted_model(None, "tiny"), "auto") == Freshness(True, (), ())


def test_a_catalog_sha256_other_than_the_record_is_a_new_revision(home: Home, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    state = installed(home)
    write_catalog(tmp_path / "catalog.toml", monkeypatch, sha256="ab" * 32)
    assert check(home, state, wanted_model(None, "tiny"), "auto").reasons == (f"a new revision of {FILE}",)
    write_catalog(tmp_path / "catalog.toml", monkeypatch, sha256=SHA.upper())  # the same digest, other case
    assert check(home, state, wanted_model(None, "tiny"), "auto").up_to_date


def test_a_quant_gone_from_the_catalog_says_so(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorded quant left the catalog: the upgrade picks another, and the reason names what is available."""
    state = installed(home)
    write_catalog(tmp_path / "catalog.toml", monkeypatch, quant="Q4_K_M", file="tiny-Q4_K_M.gguf")
    (reason,) = check(home, state, wanted_model(None, "tiny"), "auto").reasons
    assert "Q8_0" in reason and "Q4_K_M" in reason


@pytest.mark.parametrize("change", ["mmproj", "file"])
def test_other_catalog_files_are_a_change(home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          change: str) -> None:
    """The catalog adds an mmproj, or renames the quant's file: the set of file names differs."""
    state = installed(home)
    if change == "mmproj":
        write_catalog(tmp_path / "catalog.toml", monkeypatch, mmproj="mmproj-F16.gguf")
    else:
        write_catalog(tmp_path / "catalog.toml", monkeypatch, file="tiny-v2-Q8_0.gguf")
    assert check(home, state, wanted_model(None, "tiny"), "auto").reasons == (
        "the catalog lists other files for this model",)


def test_a_local_file_is_checked_by_its_stat_identity_only(home: Home, tmp_path: Path) -> None:
    """MODEL as a path: no catalog, no hub; the file outside the home is recorded by absolute path."""
    own = tmp_path / "Downloads" / "mine.gguf"
    own.parent.mkdir()
    own.write_bytes(MODEL)
    write_scripts(home)
    state = install_state(home, place_engine(home), [file_record(home, own, SHA, source="local")], model=str(own),
                          model_id="mine", quant="Q8_0")
    assert state.files[0].path == str(own)
    assert check(home, state, wanted_model(None, str(own)), "auto") == Freshness(True, (), ())
    own.write_bytes(MODEL + b"\0")
    assert check(home, state, wanted_model(None, str(own)), "auto").reasons == (f"{own} is missing or changed on disk",)


class TestBranchRevisions:
    """A branch (or no revision) can move: the hub's listing, metadata only, decides."""

    @pytest.fixture
    def served(self, hub: LoopbackHub, home: Home, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LoopbackHub:
        write_catalog(tmp_path / "catalog.toml", monkeypatch, revision="main")
        monkeypatch.setenv("QWENKIT_HF_ENDPOINT", hub.endpoint)
        monkeypatch.setenv("QWENKIT_MODELSCOPE_ENDPOINT", hub.endpoint)
        hub.create_repo(REPO, {FILE: MODEL})
        return hub

    def test_an_unmoved_branch_is_up_to_date_and_no_bytes_are_read(self, served: LoopbackHub, home: Home) -> None:
        state = installed(home, revision=served.commit_of(REPO))
        assert check(home, state, wanted_model(None, "tiny"), "auto") == Freshness(True, (), ())
        served.wait_idle()
        assert served.requests()  # the listing was asked …
        assert served.bytes_served(FILE) == 0  # … and not one byte of the model was read

    def test_a_new_commit_on_the_branch_is_a_new_revision(self, served: LoopbackHub, home: Home) -> None:
        state = installed(home, revision=served.commit_of(REPO))
        served.commit(REPO, {FILE: seeded_bytes(len(MODEL), 32)})
        assert check(home, state, wanted_model(None, "tiny"), "auto").reasons == (f"a new revision of {FILE}",)

    def test_an_unreachable_hub_keeps_the_install_with_a_note(self, served: LoopbackHub, home: Home,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
        """Offline, the installed files stay: up to date, and the note says the check could not be made."""
        state = installed(home, revision=served.commit_of(REPO))
        dead = closed_port_url()
        monkeypatch.setenv("QWENKIT_HF_ENDPOINT", dead)
        monkeypatch.setenv("QWENKIT_MODELSCOPE_ENDPOINT", dead)
        fresh = check(home, state, wanted_model(None, "tiny"), "auto")
        assert fresh.up_to_date and fresh.reasons == ()
        (note,) = fresh.notes
        assert note.startswith("could not check for a newer revision") and note.endswith("keeping the installed files")

    def test_a_hub_file_without_a_revision_follows_its_branch(self, served: LoopbackHub, home: Home) -> None:
        """``hf:OWNER/REPO/FILE`` names no revision: its branch is asked (only the hf source, as requested)."""
        model = f"hf:{REPO}/{FILE}"
        state = installed(home, model=model, revision=served.commit_of(REPO))
        assert check(home, state, wanted_model(None, model), "hf").up_to_date
        served.commit(REPO, {FILE: seeded_bytes(len(MODEL), 33)})
        assert check(home, state, wanted_model(None, model), "hf").reasons == (f"a new revision of {FILE}",)

    def test_a_hub_file_pinned_to_a_commit_asks_no_hub(self, served: LoopbackHub, home: Home) -> None:
        commit = served.commit_of(REPO)
        model = f"hf:{REPO}/{FILE}@{commit}"
        state = installed(home, model=model, revision=commit)
        served.clear_log()
        served.commit(REPO, {FILE: seeded_bytes(len(MODEL), 34)})  # the branch moves; the pin does not
        assert check(home, state, wanted_model(None, model), "hf") == Freshness(True, (), ())
        served.wait_idle()
        assert served.requests() == []
