"""Before the switch-over: every model file the new install would serve can be loaded by its engine.

An upgrade stops the server that works only after the staged install has shown, as far as that is possible without
a second copy of the model in memory, that it can serve (the engine's self-test ran when it was placed):
1. each model file is a complete GGUF: its header parses and every tensor's data lies inside the file (a
   half-uploaded release parses but runs past its end: ``plan.gguf_header.read_header``);
2. its architecture is one the installed llama.cpp build knows (``place.engine_archs``);
3. llama.cpp's own dry run, ``llama-fit-params`` on the staged files (the tune stage), did not say the model
   cannot be loaded (its words are sometimes lost at exit, ``tune.fit``; then 1 and 2 still stand).
A failure is a refusal, not a tool failure: nothing is stopped or swapped, the bytes are remembered
(``record.refusals``) so a rerun refuses them at once, and staged copies are removed. The exit code follows the
cause: 5 for a damaged file, 3 for a model this engine cannot run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from bootstrap.core.console import t
from bootstrap.core.home import Home
from bootstrap.fetch.records import PlacedFile
from bootstrap.install.cleanup import remove_empty_parents
from bootstrap.place.engine_archs import knows_architecture
from bootstrap.place.engine_failure import MODEL_CORRUPT, MODEL_UNSUPPORTED, EngineFailed, EngineFailure
from bootstrap.plan.gguf_header import GGUFHeaderError, read_header
from bootstrap.record.refusals import Refusal, now_utc, save_refusal
from bootstrap.tune.fit import TuneResult

ENGINE = "llama-server"


Refused = tuple[PlacedFile, EngineFailure, str]  # the file, why, and the reason in one clause


def _file_failure(placed: PlacedFile, engine_dir: Path) -> tuple[EngineFailure, str] | None:
    """What makes this file impossible to serve, read from its header and the engine build; None: nothing."""
    path = placed.bytes_at
    try:
        header = read_header(path)
    except GGUFHeaderError as exc:
        detail = exc.message.removeprefix(f"{path}: ")
        return EngineFailure(MODEL_CORRUPT, detail), t("switch.reason_damaged", detail=detail)
    if knows_architecture(engine_dir, header.architecture) is False:
        failure = EngineFailure(MODEL_UNSUPPORTED, header.architecture)
        return failure, failure.message(ENGINE)
    return None


def check_files(files: Sequence[PlacedFile], engine_dir: Path) -> Refused | None:
    """The first file that cannot serve; None when every file can."""
    for placed in files:
        found = _file_failure(placed, engine_dir)
        if found is not None:
            return placed, *found
    return None


def check_tuned(files: Sequence[PlacedFile], tuned: TuneResult) -> Refused | None:
    """llama.cpp's dry run said the model cannot be loaded: that refuses the model file (the one fit loads)."""
    if tuned.model_failure is None:
        return None
    model = next(f for f in files if f.role == "model")
    return model, tuned.model_failure, tuned.model_failure.message("llama-fit-params")


def refuse(home: Home, refused: Refused, files: Sequence[PlacedFile], *, upgrade: bool,
           engine_build: int) -> EngineFailed:
    """Remember the refused bytes, remove the copies nothing will use, and return the error to raise."""
    placed, failure, reason = refused
    error = EngineFailed(failure, t("switch.refused", file=placed.path.name, reason=reason),
                         t("switch.hint_refused_upgrade" if upgrade else "switch.hint_refused_first"))
    save_refusal(home, Refusal(sha256=placed.sha256, file=placed.path.name, revision=placed.revision,
                               source=placed.source, when=now_utc(), cause=failure.cause, reason=reason,
                               exit_code=int(error.exit_code),
                               engine_build=engine_build if failure.cause == MODEL_UNSUPPORTED else None))
    for f in files:
        _discard(home, f, corrupt=f is placed and failure.cause == MODEL_CORRUPT)
    return error


def _discard(home: Home, placed: PlacedFile, *, corrupt: bool) -> None:
    """A staged copy always goes. On a first install a damaged file in ``models/`` goes too (it can never serve);
    one this engine cannot load stays (a newer build may). A file outside the home (a local ``.gguf`` the user
    named) is never touched. Folders left empty go as well, up to ``cache/staging`` or ``models/`` themselves."""
    if placed.staged is None and not corrupt:
        return
    target, stop = (placed.staged, home.staging_dir.parent) if placed.staged is not None \
        else (placed.path, home.models_dir)
    if stop not in target.parents:
        return
    with contextlib.suppress(OSError):
        target.unlink(missing_ok=True)
    remove_empty_parents(target, stop)
