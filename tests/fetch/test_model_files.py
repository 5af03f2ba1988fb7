"""Which files a MODEL names (a catalog quant plus its mmproj, a hub file plus the other shards of a split GGUF) and
where they land: ``models/<repo>/<path>`` in the home, or a ``--dest`` folder with the partials on its own
filesystem; a name from a catalog or a hub that would climb out of the folder is refused before any download.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bootstrap.catalog.models import ModelFile, RepoRef, load_catalog
from bootstrap.core import console
from bootstrap.core.errors import SourceError, UsageError
from bootstrap.core.home import Home
from bootstrap.fetch.model_files import PARTIAL_SUBDIR, destinations, report_resolution, wanted_files
from bootstrap.fetch.records import ResolvedFile
from bootstrap.fetch.source_probe import SourceOutcome
from bootstrap.fetch.sources import Resolution

pytestmark = pytest.mark.usefixtures("english")

REPO = "acme/tiny-GGUF"


@pytest.fixture(autouse=True)
def _shipped_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("QWENKIT_CATALOG", raising=False)


def test_a_catalog_id_names_its_quant_and_the_mmproj() -> None:
    """The catalog entries themselves come back (their size and sha256 hints travel to the resolver)."""
    entry = load_catalog().model(None)
    assert entry.mmproj is not None
    files, repos = wanted_files(entry.id)
    assert files == [entry.quant(None).file, entry.mmproj] and repos == entry.repos
    last = entry.quants[-1]
    files, _ = wanted_files(f"{entry.id}:{last.name}")
    assert files[0] == last.file


def test_a_hub_file_names_itself_at_its_revision() -> None:
    files, repos = wanted_files(f"ms:{REPO}/sub/model-Q4.gguf@v1.0")
    assert files == [ModelFile("sub/model-Q4.gguf")] and repos == (RepoRef("modelscope", REPO, "v1.0"),)


def test_the_first_shard_brings_the_others() -> None:
    """llama.cpp opens the rest of a split GGUF from the first part, so all of them are wanted, in order."""
    files, _ = wanted_files(f"hf:{REPO}/Q4/model-00001-of-00003.gguf")
    assert [f.path for f in files] == [f"Q4/model-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    files, _ = wanted_files(f"hf:{REPO}/model-00002-of-00003.gguf")  # not the first: only itself
    assert [f.path for f in files] == ["model-00002-of-00003.gguf"]


def test_a_local_file_is_not_downloadable(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a local file"):
        wanted_files(str(tmp_path / "model.gguf"))


def test_files_go_under_the_home_by_repo_and_path(tmp_path: Path) -> None:
    home = Home(tmp_path / "home")
    targets, partial = destinations(["m.gguf", "sub/mmproj.gguf"], REPO, None, home)
    assert targets == [home.models_dir / REPO / "m.gguf", home.models_dir / REPO / "sub" / "mmproj.gguf"]
    assert partial == home.partial_dir


def test_a_dest_folder_gets_flat_names_and_partials_on_its_filesystem(tmp_path: Path) -> None:
    """``--dest`` outside the home: the partials sit in the destination (the final rename stays on one
    filesystem); inside the home, the home's own partial folder serves."""
    home = Home(tmp_path / "home")
    dest = tmp_path / "usb drive"
    targets, partial = destinations(["sub/m.gguf"], REPO, dest, home)
    assert targets == [dest / "m.gguf"] and partial == dest / PARTIAL_SUBDIR
    for inside in (home.root, home.root / "exports"):
        assert destinations(["m.gguf"], REPO, inside, home)[1] == home.partial_dir


@pytest.mark.parametrize(("paths", "repo"), [
    (["../escape.gguf"], REPO), (["/etc/passwd"], REPO), (["a//b.gguf"], REPO), (["sub/./m.gguf"], REPO),
    (["C:evil.gguf"], REPO), (["sub\\..\\..\\m.gguf"], REPO), ([""], REPO), (["m.gguf"], "acme/.."),
    (["m.gguf"], "../acme"), (["m.gguf"], "/abs/repo"),
])
def test_names_that_would_leave_the_folder_are_refused(tmp_path: Path, paths: list[str], repo: str) -> None:
    """Backslashes count as separators (a Windows path in a listing), drive colons and empty parts are refused."""
    with pytest.raises(UsageError, match="would leave the destination folder"):
        destinations(paths, repo, None, Home(tmp_path / "home"))


def resolved(source: str) -> ResolvedFile:
    return ResolvedFile(source, REPO, "m.gguf", "0" * 40, f"http://127.0.0.1:9/{source}", 10, "ab" * 32)


@pytest.mark.parametrize("verbose", [True, False])
def test_the_report_shows_measurements_drops_and_notes(capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch, verbose: bool) -> None:
    """Measured times only when there was a choice (more than one source) and only with ``--verbose`` (a technical
    line), every dropped source with its reason, and every note; all on stderr."""
    monkeypatch.setattr(console, "_verbose", verbose)
    resolution = Resolution(
        files=((resolved("hf"), resolved("modelscope")),),
        outcomes=(SourceOutcome("hf", 0.010, 0.0304), SourceOutcome("modelscope", 0.2, 0.3),
                  SourceOutcome("mirror:x", error=SourceError("connection refused"))),
        notes=("source modelscope lists another file",),
    )
    report_resolution(resolution)
    out, err = capsys.readouterr()
    assert out == ""
    assert ("source hf: 40 ms" in err and "source modelscope: 500 ms" in err) is verbose
    assert "source mirror:x skipped: connection refused" in err
    assert "source modelscope lists another file" in err
    single = Resolution(files=((resolved("hf"),),), outcomes=(SourceOutcome("hf", 0.01, 0.02),))
    report_resolution(single)
    assert capsys.readouterr().err == ""
