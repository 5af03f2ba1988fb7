"""The context a user asks for (``plan --ctx N``, ``install --ctx N``, ``ctx = N`` in an answers file), checked.

A user's context is a choice, like Ollama's ``num_ctx`` or LM Studio's slider: the plan never shrinks it. So it is
checked before anything is planned or downloaded, each failure a one-line error:

- out of range (512 … 1 Mi tokens) or not a number → exit 2;
- larger than the model was trained for → exit 2 naming the model's maximum. llama-server would start, but caps
  every slot at the trained context ("the slot context exceeds the training context of the model - capping",
  ``tools/server/server-context.cpp``, ``n_ctx_slot()``), so the memory asked for could never be used;
- too large for this machine's memory with every quant of the model → exit 3 naming the largest context that
  fits and with which quant (``largest_fitting``). A smaller quant of the same model at the asked context is
  taken first (said in the plan's reasons); another model is never swapped in for a context, only when the model
  fits at no context at all (the planner's fallbacks, as without ``--ctx``).

llama.cpp pads a context to a multiple of 256 (``GGML_PAD(cparams.n_ctx, 256)``, ``src/llama-context.cpp``), so the
largest context offered is one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.input_checks import decimal_int

MIN_CTX, MAX_CTX = 512, 1 << 20
CTX_STEP = 256  # llama.cpp's padding of n_ctx
AUTO = "auto"  # install --ctx auto: the plan chooses again (a rerun otherwise keeps the recorded choice)
T = TypeVar("T")


def check_range(ctx: int) -> int:
    """``ctx`` when llama-server and the memory model can take it; else exit 2."""
    if not MIN_CTX <= ctx <= MAX_CTX:
        raise UsageError(t("plan.err_ctx", ctx=ctx, low=MIN_CTX, high=MAX_CTX))
    return ctx


def parse_ctx(value: str | int, option: str = "--ctx") -> int | None:
    """A context as typed (``8192``) or read from an answers file; ``auto`` → None (the plan chooses)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return check_range(value)
    text = str(value).strip()
    if text.lower() == AUTO:
        return None
    ctx = decimal_int(text)
    if ctx is None:
        raise UsageError(t("cli.err_invalid_value", arg=option, type=t("cli.type_int"), value=value),
                         t("options.hint_ctx_value"))
    return check_range(ctx)


def check_trained(ctx: int, title: str, n_ctx_train: int) -> None:
    """Exit 2 when ``ctx`` is more than the model was trained for (``n_ctx_train`` 0: not stated, not checked)."""
    if n_ctx_train > 0 and ctx > n_ctx_train:
        raise UsageError(t("options.err_ctx_trained", ctx=ctx, title=title, max=n_ctx_train),
                         t("options.hint_ctx_trained", max=n_ctx_train))


def largest_fitting(fits: Callable[[int], bool], below: int, floor: int = MIN_CTX) -> int | None:
    """The largest multiple of ``CTX_STEP`` in [``floor``, ``below``) for which ``fits`` holds (memory only grows
    with the context, so a bisection finds it); None when not even ``floor`` fits."""
    lo, hi = -(-floor // CTX_STEP), (below - 1) // CTX_STEP
    if hi < lo or not fits(lo * CTX_STEP):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid * CTX_STEP):
            lo = mid
        else:
            hi = mid - 1
    return lo * CTX_STEP


def best_of(found: Sequence[tuple[T, int | None]]) -> tuple[T, int] | None:
    """(file, context) with the largest context among (file, largest fitting context) pairs, the first file
    (the better one, in preference order) on a tie; None when none fits."""
    best: tuple[T, int] | None = None
    for item, ctx in found:
        if ctx is not None and (best is None or ctx > best[1]):
            best = (item, ctx)
    return best
