"""The mirror pool of one download: preference order, dropping a failed mirror (once, with a warning naming the
next), and the SourceError (exit 4) when none is left — "the source changed" outranking every other reason.

The download engine shares one pool between its worker threads, so dropping must be idempotent and race-free.
"""

from __future__ import annotations

import threading

import pytest

from bootstrap.core.errors import ExitCode, SourceError
from bootstrap.fetch.mirror_pool import MirrorPool
from bootstrap.fetch.records import Mirror

pytestmark = pytest.mark.usefixtures("english")

NAME = "model-Q4_K_M.gguf"


def pool(*sources: str) -> MirrorPool:
    """A pool over one mirror per source name, in the order given (the preference order)."""
    return MirrorPool(NAME, [Mirror(s, f"http://127.0.0.1:9/{s}/{NAME}") for s in sources])


def test_current_is_the_first_live_mirror_in_preference_order() -> None:
    """Failover walks the configured preference: the second mirror only serves once the first is dropped."""
    p = pool("hf", "modelscope", "mirror:intranet")
    assert p.current().mirror.source == "hf"
    p.drop(p.states[1], "HTTP 503")  # dropping a later one does not change who serves
    assert p.current().mirror.source == "hf"
    p.drop(p.states[0], "connection reset")
    assert p.current().mirror.source == "mirror:intranet"
    assert [s.dead for s in p.states] == [True, True, False]
    assert [s.reason for s in p.states] == ["connection reset", "HTTP 503", ""]


def test_a_drop_warns_with_the_reason_and_the_mirror_that_continues(capsys: pytest.CaptureFixture[str]) -> None:
    """The user sees which source failed, why, and where the download goes on (stderr, not stdout)."""
    p = pool("hf", "modelscope")
    p.drop(p.states[0], "HTTP 429")
    out, err = capsys.readouterr()
    assert out == ""
    assert NAME in err and "hf" in err and "HTTP 429" in err and "continuing from modelscope" in err


def test_dropping_the_last_mirror_is_silent_and_current_raises(capsys: pytest.CaptureFixture[str]) -> None:
    """No "continuing from …" line when nothing continues: the SourceError is the one message."""
    p = pool("hf")
    p.drop(p.states[0], "connection refused")
    assert capsys.readouterr().err == ""
    with pytest.raises(SourceError) as err:
        p.current()
    assert err.value.exit_code == ExitCode.SOURCE
    assert NAME in err.value.message and "hf: connection refused" in err.value.message
    assert err.value.hint and "again" in err.value.hint


def test_a_second_drop_of_the_same_mirror_keeps_the_first_reason(capsys: pytest.CaptureFixture[str]) -> None:
    """Workers that fail on the same mirror at once drop it once: one warning, the first reason, no 'changed'
    flag added later."""
    p = pool("hf", "modelscope")
    p.drop(p.states[0], "first")
    p.drop(p.states[0], "second", changed=True)
    assert (p.states[0].reason, p.states[0].changed) == ("first", False)
    assert capsys.readouterr().err.count("first") == 1


def test_every_mirrors_last_failure_is_in_the_error() -> None:
    """With no mirror left (and none changed), the error names all sources and each one's reason, in order."""
    p = pool("hf", "modelscope")
    p.drop(p.states[1], "HTTP 404")
    p.drop(p.states[0], "read timed out")
    message = p.exhausted().message
    assert "hf, modelscope" in message
    assert "hf: read timed out; modelscope: HTTP 404" in message


def test_a_changed_source_outranks_other_failures() -> None:
    """A mirror that started serving another version means a rerun fetches the new one: that is the message,
    even when it was not the last mirror dropped."""
    p = pool("hf", "modelscope", "mirror:intranet")
    p.drop(p.states[0], "HTTP 503")
    p.drop(p.states[1], "content changed", changed=True)
    p.drop(p.states[2], "connection reset")
    with pytest.raises(SourceError) as err:
        p.current()
    assert "changed on modelscope" in err.value.message
    assert "HTTP 503" not in err.value.message and "connection reset" not in err.value.message


def test_a_pool_without_mirrors_fails_with_an_unknown_reason() -> None:
    """No mirror at all is still a SourceError (exit 4) rather than an IndexError; the reason reads "?"."""
    p = MirrorPool(NAME, [])
    with pytest.raises(SourceError) as err:
        p.current()
    assert err.value.message.endswith(": ?")


def test_concurrent_drops_of_one_mirror_warn_once(capsys: pytest.CaptureFixture[str]) -> None:
    """Eight workers failing on the same mirror together: one drop, one warning, and the next mirror serves."""
    p = pool("hf", "modelscope")
    start = threading.Barrier(8)

    def fail(i: int) -> None:
        start.wait()
        p.drop(p.states[0], f"worker {i}")

    threads = [threading.Thread(target=fail, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert capsys.readouterr().err.count("continuing from modelscope") == 1
    assert p.states[0].reason.startswith("worker ")
    assert p.current().mirror.source == "modelscope"


def test_a_request_that_set_out_before_a_failure_cannot_restore_the_old_redirect_target() -> None:
    """After a failure every request resolves again through the mirror's URL (where the hub states the sha256 it
    serves now). A worker that was already using the cached CDN URL and succeeds afterwards must not put that URL
    back: it did, and test_fault_matrix[mutate-modelscope] then finished the old version from the CDN in about
    one run of three instead of seeing the upstream change."""
    st = pool("modelscope").states[0]
    cdn = ("http://127.0.0.1:9/lfs/old", {})
    st.remember_target(cdn, st.route()[1])
    in_flight = st.route()  # a worker sets out with the cached target
    assert in_flight[0] == cdn
    st.forget_target()  # another worker's request failed
    st.remember_target(cdn, in_flight[1])  # the first one succeeds on the old target
    assert st.route()[0] is None  # the next request resolves again
    fresh = st.route()
    new = ("http://127.0.0.1:9/lfs/new", {})
    st.remember_target(new, fresh[1])  # resolved after the failure: cached again
    assert st.route()[0] == new
