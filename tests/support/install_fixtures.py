"""``make_bed``: whole-install test beds on the loopback hub (a pytest plugin, listed in ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from bootstrap.core.home import Home
from bootstrap.register.managers import FallbackManager
from tests.support import standin
from tests.support.hub import LoopbackHub
from tests.support.install_bed import (
    MODEL_FILE,
    MODEL_REPO,
    MTP_MODEL_FILE,
    MTP_MODEL_REPO,
    QWEN_MODEL_FILE,
    QWEN_MODEL_REPO,
    InstallBed,
    catalog_text,
    mtp_catalog_text,
    qwen_catalog_text,
    serve_engine,
    write_chat_model,
    write_mtp_model,
)
from tests.support.qwen_chat_model import qwen_chat_model


@pytest.fixture
def make_bed(hub: LoopbackHub, engine_asset: Path, engine_bin_dir: Path, tmp_path: Path
             ) -> Iterator[Callable[..., InstallBed]]:
    """``make_bed({variant: stand-in script}, model=…, server_args=…, engine=…, mtp=…, qwen=…)``: a hub serving the
    test bed's engine (or the ``engine`` archive) under both Linux names except where a stand-in build takes its
    place, a one-model catalog, and a home. ``mtp=True``: the catalog's model is the tiny qwen35moe with an MTP head,
    its server_args drafting with it (``install_bed.mtp_catalog_text``); ``mtp="off"``: the same model, no drafting.
    ``qwen=True``: the catalog's model is the Qwen chat model (the family's chat template and tokenizer:
    ``install_bed.qwen_catalog_text``), published as ``QWEN_MODEL_REPO``/``QWEN_MODEL_FILE``."""
    beds: list[InstallBed] = []

    def make(builds: Mapping[str, str] | None = None, *, model: Path | None = None,
             server_args: tuple[str, ...] = ("-c", "512", "-t", "2"), engine: Path | None = None,
             mtp: bool | str = False, qwen: bool = False) -> InstallBed:
        assets = {variant: standin.release_asset(tmp_path / f"standin-{variant}", engine_bin_dir, script)
                  for variant, script in (builds or {}).items()}
        bed = InstallBed(hub, Home(tmp_path / "Qwen 安装 home"), tmp_path / "catalog.toml",
                         serve_engine(hub, engine or engine_asset, variants=assets))
        if qwen:
            revision = hub.create_repo(QWEN_MODEL_REPO, {QWEN_MODEL_FILE: model or qwen_chat_model()})
            bed.catalog.write_text(qwen_catalog_text(revision, server_args=server_args), encoding="utf-8")
        elif mtp:
            model = model or write_mtp_model(tmp_path / "rev1" / MTP_MODEL_FILE)
            revision = hub.create_repo(MTP_MODEL_REPO, {MTP_MODEL_FILE: model})
            bed.catalog.write_text(mtp_catalog_text(revision, draft=mtp is True), encoding="utf-8")
        else:
            model = model or write_chat_model(tmp_path / "rev1" / MODEL_FILE)
            revision = hub.create_repo(MODEL_REPO, {MODEL_FILE: model})
            bed.catalog.write_text(catalog_text(revision, server_args=server_args), encoding="utf-8")
        beds.append(bed)
        return bed

    yield make
    for bed in beds:
        FallbackManager(bed.home).stop()


@pytest.fixture
def wheel_bed(hub: LoopbackHub, engine_asset: Path, tmp_path: Path, wheelhouse: Path) -> Iterator[InstallBed]:
    """The test-bed engine and the tiny chat model on the hub, a catalog pinned to it, and a home whose path has a
    space and Chinese characters; installs build the runtime venv from the local wheelhouse (the kit's own wheel
    included), as a real install does."""
    model = write_chat_model(tmp_path / "rev1" / MODEL_FILE)
    revision = hub.create_repo(MODEL_REPO, {MODEL_FILE: model})
    bed = InstallBed(hub, Home(tmp_path / "用户 Qwen home"), tmp_path / "catalog.toml",
                     serve_engine(hub, engine_asset), wheels=wheelhouse)
    bed.pin(revision)
    try:
        yield bed
    finally:
        FallbackManager(bed.home).stop()
