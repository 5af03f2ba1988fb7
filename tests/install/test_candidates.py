"""The plan stage's candidates for an install: each gets a model profile from the best facts at hand — a local file's
header, the catalog's shape facts, a quant already in the home, or (a catalog entry without shape, a hub file) the
remote header read with a few ranged requests, never the weights. A bundle file whose header does not parse is
reported as altered (exit 5) when it does not match its manifest, else as the bad model it is (exit 2).

Real GGUF files (``tiny_gguf``), real HTTP on the loopback hub; when nothing should touch the network both hub
endpoints point at a closed port, so any request would fail the test.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from bootstrap.catalog.model_ref import CatalogRef, HubFileRef, LocalFileRef
from bootstrap.catalog.models import load_catalog
from bootstrap.core.errors import ExitCode, IntegrityError, UsageError
from bootstrap.detect.hardware import HardwareProfile, load_profile
from bootstrap.install.candidates import candidates_for
from bootstrap.plan.planner import Plan, choose
from tests.support.bundle_files import model_bundle
from tests.support.dead_hubs import point_hubs_nowhere
from tests.support.hub import LoopbackHub
from tests.support.install_bed import write_chat_model
from tests.support.paths import TEST_DATA
from tests.support.tiny_gguf import write_model

pytestmark = pytest.mark.usefixtures("english")

REPO = "acme/tiny-GGUF"
FILE = "tiny-Q8_0.gguf"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shipped catalog, no proxy, and hubs that cannot answer unless a test points them at the loopback hub."""
    point_hubs_nowhere(monkeypatch, "QWENKIT_CATALOG")


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 12-layer Q8_0 llama (about 1.4 MB: more than the first 1 MiB ranged read)."""
    return write_chat_model(tmp_path_factory.mktemp("chat") / FILE)


def use_hub(hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QWENKIT_HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("QWENKIT_MODELSCOPE_ENDPOINT", hub.endpoint)


def shapeless_catalog(path: Path, monkeypatch: pytest.MonkeyPatch, *, q4_size: int) -> None:
    """A catalog entry with no shape facts (an intranet admin's own model): two quants, sizes for the smaller only."""
    path.write_text(f'''schema = 1
default_model = "tiny"

[[models]]
id = "tiny"
architecture = "llama"
default_quant = "Q8_0"
repos = [ {{ hub = "hf", repo = "{REPO}" }} ]
quants = [
  {{ name = "Q8_0", file = "{FILE}" }},
  {{ name = "Q4_0", file = "tiny-Q4_0.gguf", size = {q4_size} }},
]
''', encoding="utf-8")
    monkeypatch.setenv("QWENKIT_CATALOG", str(path))


def test_a_missing_local_file_is_a_usage_error(tmp_path: Path) -> None:
    gone = tmp_path / "gone.gguf"
    with pytest.raises(UsageError) as err:
        candidates_for(LocalFileRef(gone), None)
    assert err.value.exit_code == ExitCode.USAGE and str(gone) in err.value.message


def test_a_local_file_is_one_candidate_from_its_header(chat_model: Path) -> None:
    """No catalog, no network, no fallbacks: the file's own header, its size and its quant label."""
    (only,), fallbacks = candidates_for(LocalFileRef(chat_model), None)
    assert fallbacks == []
    assert (only.file, only.size, only.quant, only.facts) == (str(chat_model), chat_model.stat().st_size, "Q8_0",
                                                               "header")
    assert only.profile.architecture == "llama" and only.profile.n_layer == 12


def test_a_hub_file_is_planned_from_its_remote_header(hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch,
                                                      chat_model: Path) -> None:
    """``hf:OWNER/REPO/FILE``: resolved (size) and its header read with ranged requests — not the whole file."""
    use_hub(hub, monkeypatch)
    hub.create_repo(REPO, {f"sub/{FILE}": chat_model})
    size = chat_model.stat().st_size
    (only,), fallbacks = candidates_for(HubFileRef("hf", REPO, f"sub/{FILE}"), None)
    assert fallbacks == []
    assert (only.model_id, only.title, only.quant, only.file, only.size, only.facts) == (
        FILE, FILE, "file", f"sub/{FILE}", size, "remote-header")
    assert only.profile.n_layer == 12
    hub.wait_idle()
    assert 0 < hub.bytes_served(f"sub/{FILE}") < size
    assert all(r.range for r in hub.requests(file_glob=f"sub/{FILE}") if r.status in (200, 206))


def test_a_hub_file_that_is_not_there_is_a_usage_error(hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch,
                                                       chat_model: Path) -> None:
    use_hub(hub, monkeypatch)
    hub.create_repo(REPO, {FILE: chat_model})
    with pytest.raises(UsageError):
        candidates_for(HubFileRef("hf", REPO, "other.gguf"), None)


def test_a_catalog_model_with_shape_facts_needs_no_network() -> None:
    """The shipped default model: its default quant and every smaller one, then each fallback model's; all from
    the catalog's shape facts (both hubs are unreachable here)."""
    catalog = load_catalog()
    entry = catalog.model(None)
    assert entry.shape is not None and entry.fallbacks
    candidates, fallbacks = candidates_for(CatalogRef(entry.id), None)
    plain = [c for c in candidates if not c.requires_mtp]
    assert [c.quant for c in plain] == [q.name for q in entry.quants_from_default_down()]
    assert {c.model_id for c in plain} == {entry.id} and {c.facts for c in candidates} == {"catalog"}
    expected = [(fid, q.name) for fid in entry.fallbacks for q in catalog.model(fid).quants_from_default_down()]
    assert [(c.model_id, c.quant) for c in fallbacks] == expected
    sizes = [c.profile.total_weight_bytes for c in plain]
    assert sizes == sorted(sizes, reverse=True)  # smaller quants plan smaller weights


def test_the_mtp_variant_comes_first_for_each_quant_it_has() -> None:
    """The default model names its MTP variant: that repo's file of a quant is tried just before the plain one
    (the planner takes it only where the head drafts on the GPU), with the head counted from the catalog."""
    catalog = load_catalog()
    entry = catalog.model(None)
    assert entry.mtp_variant is not None
    variant = catalog.model(entry.mtp_variant)
    candidates, _ = candidates_for(CatalogRef(entry.id), None)
    shared = {q.name for q in variant.quants} & {q.name for q in entry.quants_from_default_down()}
    assert shared
    for i, c in enumerate(candidates):
        if c.requires_mtp:
            assert c.model_id == variant.id and c.profile.has_mtp and c.profile.mtp_bytes > 0
            after = candidates[i + 1]
            assert (after.model_id, after.quant, after.requires_mtp) == (entry.id, c.quant, False)
            assert not after.profile.has_mtp
    assert {c.quant for c in candidates if c.requires_mtp} == shared
    only_plain, _ = candidates_for(CatalogRef(entry.id, "UD-Q4_K_M"), None)  # a quant the MTP repo lacks: plain only
    assert [(c.model_id, c.requires_mtp) for c in only_plain] == [(entry.id, False)]


def test_an_explicit_quant_gets_no_substitute() -> None:
    """``MODEL:QUANT`` is what the user wants: that quant only, and no fallback model."""
    entry = load_catalog().model(None)
    smallest = entry.quants[-1].name
    candidates, fallbacks = candidates_for(CatalogRef(entry.id, smallest.lower()), None)
    # That quant only (its MTP-head file first where the MTP repo has it: the same quant, not a substitute).
    assert {c.quant for c in candidates} == {smallest} and fallbacks == []
    assert [c.requires_mtp for c in candidates][-1] is False
    with pytest.raises(UsageError):
        candidates_for(CatalogRef(entry.id, "Q9_X"), None)


def test_a_catalog_model_without_shape_reads_the_remote_header(hub: LoopbackHub, monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path, chat_model: Path) -> None:
    """No shape facts and nothing local: the default quant's header is read remotely (not its weights); the other
    quant's profile is that one scaled by the file sizes."""
    size = chat_model.stat().st_size
    shapeless_catalog(tmp_path / "catalog.toml", monkeypatch, q4_size=size // 2)
    use_hub(hub, monkeypatch)
    hub.create_repo(REPO, {FILE: chat_model})
    q8, q4 = candidates_for(CatalogRef("tiny"), None)[0]
    assert (q8.quant, q8.size, q4.quant, q4.size) == ("Q8_0", size, "Q4_0", size // 2)
    assert q8.facts == q4.facts == "header"
    assert q4.profile.total_weight_bytes == pytest.approx(q8.profile.total_weight_bytes / 2, rel=0.01)
    hub.wait_idle()
    assert 0 < hub.bytes_served(FILE) < size


def test_a_shapeless_model_already_in_the_home_needs_no_network(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    """A quant already downloaded gives the exact header: a rerun offline still plans (hubs are dead here)."""
    models = tmp_path / "models"
    local = write_model("llama", models / REPO / "tiny-Q4_0.gguf", dtype="q8_0")
    shapeless_catalog(tmp_path / "catalog.toml", monkeypatch, q4_size=local.stat().st_size)
    candidates, fallbacks = candidates_for(CatalogRef("tiny", "Q4_0"), models)
    assert [c.quant for c in candidates] == ["Q4_0"] and fallbacks == []
    assert candidates[0].facts == "header" and candidates[0].profile.architecture == "llama"


@pytest.mark.parametrize("faithful", [True, False])
def test_a_bundle_file_that_is_no_gguf(tmp_path: Path, faithful: bool) -> None:
    """A bundle file whose header does not parse: altered since the manifest was written is an integrity failure
    (exit 5, "recopy the bundle"); listed as it is, it is simply not a model (exit 2)."""
    bundle = tmp_path / "bundle"
    junk = b"not a gguf file at all " * 100
    listed = junk if faithful else b"GGUF" + junk[4:]
    model_bundle(bundle, REPO, [(FILE, listed)])
    if not faithful:
        (bundle / "payload" / "models" / REPO / FILE).write_bytes(junk)  # same size, other bytes
    with pytest.raises(UsageError if faithful else IntegrityError) as err:
        candidates_for(HubFileRef("hf", REPO, FILE), None, source=str(bundle))
    assert err.value.exit_code == (ExitCode.USAGE if faithful else ExitCode.INTEGRITY)
    assert FILE in err.value.message


def test_a_bundle_file_is_planned_from_its_own_header(tmp_path: Path, chat_model: Path) -> None:
    """The header comes from the file on the drive (a ``file://`` URL), no HTTP at all."""
    bundle = tmp_path / "bundle"
    model_bundle(bundle, REPO, [(FILE, chat_model.read_bytes())])
    (only,), _ = candidates_for(HubFileRef("hf", REPO, FILE), None, source=str(bundle))
    assert only.size == chat_model.stat().st_size and only.profile.n_layer == 12


def test_the_catalog_default_takes_the_mtp_file_only_with_a_gpu() -> None:
    """The shipped catalog's default model through the install path's candidates: 8 GB NVIDIA gets the MTP repo's
    file with the flags; a 64 GB machine without a GPU gets the base repo's file of the same quant."""
    candidates, fallbacks = candidates_for(CatalogRef("qwen3.6-35b-a3b"), None)
    gpu = choose(candidates, _machine("rtx3070_8gb_32gb"), fallbacks=fallbacks)
    assert gpu.model_id == "qwen3.6-35b-a3b-mtp" and _drafts(gpu)
    big_ram = dataclasses.replace(_machine("no_gpu_16gb"), memory=dataclasses.replace(
        _machine("no_gpu_16gb").memory, total_bytes=64 << 30, available_bytes=60 << 30))
    cpu = choose(candidates, big_ram, fallbacks=fallbacks)
    assert cpu.model_id == "qwen3.6-35b-a3b" and cpu.quant == gpu.quant and not _drafts(cpu)



def _machine(name: str) -> HardwareProfile:
    return load_profile(TEST_DATA / "hardware" / f"{name}.json")


def _drafts(plan: Plan) -> bool:
    args = list(plan.args)
    return "draft-mtp" in args and args[args.index("draft-mtp") - 1] == "--spec-type"
