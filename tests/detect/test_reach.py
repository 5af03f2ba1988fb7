"""``doctor`` probes each download source: reachable with its time, or why not (refused, silent, DNS, TLS)."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread

import pytest

from bootstrap.core import console
from bootstrap.detect.checks import check_network
from bootstrap.detect.hardware import HardwareProfile, SourceReach
from bootstrap.detect.probes import network
from tests.detect.test_hardware import recorded_profile
from tests.support.dead_hubs import closed_port_url


class _Answer(BaseHTTPRequestHandler):
    def do_HEAD(self) -> None:
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def answering() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def black_hole() -> Iterator[str]:
    with socket.create_server(("127.0.0.1", 0), backlog=16) as srv:
        yield f"http://127.0.0.1:{srv.getsockname()[1]}"


def test_each_source_is_probed_at_once_and_bounded(answering: str, black_hole: str) -> None:
    dead = closed_port_url()
    env = {"QWENKIT_HF_ENDPOINT": black_hole, "QWENKIT_HF_MIRRORS": dead, "QWENKIT_MODELSCOPE_ENDPOINT": answering}
    start = time.monotonic()
    found = network.read_reach(env)
    # Within the budget (slack for a busy machine's thread start-up), never two socket timeouts one after another.
    assert time.monotonic() - start < min(network.REACH_BUDGET + 1.5, 2 * network.REACH_TIMEOUT)
    assert [(s.name, s.state) for s in found] == [("hf", "timeout"), (dead.removeprefix("http://"), "refused"),
                                                  ("modelscope", "reachable")]
    assert found[2].ms is not None and found[2].ms < 3000


def test_an_unknown_name_is_a_dns_failure() -> None:
    found = network.read_reach({"QWENKIT_HF_ENDPOINT": "https://no-such-host.invalid",
                                "QWENKIT_MODELSCOPE_ENDPOINT": closed_port_url()})
    assert [s.state for s in found] == ["dns", "refused"]


def _with(sources: tuple[SourceReach, ...]) -> HardwareProfile:
    profile = recorded_profile("rtx3070_8gb_32gb")
    return replace(profile, network=replace(profile.network, sources=sources))


@pytest.mark.parametrize(("sources", "verdict", "words"), [
    ((SourceReach("hf", "huggingface.co", "timeout"), SourceReach("modelscope", "modelscope.cn", "reachable", 42)),
     "ok", ("hf blocked (no answer in 3 s)", "modelscope reachable (42 ms)")),
    ((SourceReach("hf", "huggingface.co", "dns"), SourceReach("modelscope", "modelscope.cn", "dns")),
     "warn", ("hf blocked (DNS lookup failed)", "--bundle")),
    ((SourceReach("hf", "huggingface.co", "tls"), SourceReach("modelscope", "modelscope.cn", "reachable", 9)),
     "warn", ("hf TLS intercepted", "SSL_CERT_FILE")),
])
def test_the_network_check_reports_each_source(sources: tuple[SourceReach, ...], verdict: str,
                                               words: tuple[str, ...]) -> None:
    console.set_language("en")
    try:
        check = check_network(_with(sources))
    finally:
        console.set_language(None)
    assert check.verdict == verdict
    assert all(w in check.reason + check.hint for w in words), check


def test_sources_round_trip_in_the_profile_document() -> None:
    profile = _with((SourceReach("hf", "huggingface.co", "refused"), SourceReach("modelscope", "x", "reachable", 7)))
    document = profile.to_json()
    assert document["network"]["sources"][1] == {"name": "modelscope", "host": "x", "state": "reachable", "ms": 7}
    assert HardwareProfile.from_json(json.loads(json.dumps(document))).network.sources == profile.network.sources
    del document["network"]["sources"]  # a profile written before doctor probed sources still loads
    assert HardwareProfile.from_json(document).network.sources == ()
