"""The team gateway routes by model (issue 41): members that serve different models, one of them several.

Each "machine" is a host of the LAN of network namespaces (tests/support/lan.py): ``m1`` serves Gemma 3 270M alone;
``m2`` is llama-server in router mode (``--models-preset``) with Gemma, a tiny embedding model and a tiny vision
model (a real mtmd projector); the gateway host runs ``qwenkit team`` with nginx and its njs module; the client host
sends requests. Before this, nginx balanced blindly: every other embedding request went to ``m1`` and got 501 "This
server does not support embeddings", ``/v1/models`` listed one member's models with each model's llama-server
command line and absolute paths, and ``add-member`` of a router member was exit 2 "the member's slot count is
unknown" (its ``/slots`` answers 400 "model name is missing").
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import lan
from tests.support.offline import netns_available
from tests.support.team_bed import (
    GATEWAY_PORT,
    MEMBER_ARGS,
    call,
    kit,
    member_url,
    start_member,
    start_router_member,
    wait_ready,
)
from tests.support.tiny_gguf import write_model
from tests.support.tiny_vision import tiny_png, write_vision_pair

NJS = Path("/usr/lib/nginx/modules/ngx_http_js_module.so")
pytestmark = [
    pytest.mark.skipif(not netns_available(), reason="unprivileged network namespaces are unavailable here"),
    pytest.mark.skipif(bool(lan.missing_tools()), reason=f"needs {', '.join(lan.missing_tools())}"),
    pytest.mark.skipif(not any(Path(p, "nginx").is_file() for p in ("/usr/sbin", "/usr/bin", "/usr/local/sbin")),
                       reason="needs nginx (scripts/setup_env.sh installs it)"),
    pytest.mark.skipif(not NJS.is_file(), reason="needs nginx's njs module (scripts/setup_env.sh installs it)"),
]

KEYS = {"m1": "member-one-key-0123456789", "m2": "member-two-key-0123456789"}
GEMMA = "gemma-3-270m"


@pytest.fixture
def office() -> Iterator[lan.Lan]:
    with lan.lan("m1", "m2", "gateway", "client") as net:
        yield net


def _router_sections(gemma: Path, work: Path) -> dict[str, dict[str, str]]:
    embed = write_model("llama", work / "tiny-embed.gguf", pooling=3)
    vision, mmproj = write_vision_pair(work / "vision")
    return {
        GEMMA: {"model": str(gemma), "ctx-size": "2048", "parallel": "1", "threads": "1", "jinja": "false",
                "chat-template": "gemma", "cache-ram": "0", "load-on-startup": "true"},
        "tiny-embed": {"model": str(embed), "embeddings": "true", "pooling": "last", "ctx-size": "512",
                       "parallel": "2", "threads": "1", "load-on-startup": "false"},
        "tiny-vision": {"model": str(vision), "mmproj": str(mmproj), "ctx-size": "512", "threads": "1",
                        "load-on-startup": "false"},
    }


def _members_of(home: Path, since: int) -> list[tuple[str, str, str]]:
    """(model, member, status) of each access-log line after the first ``since``."""
    lines = (home / "team" / "logs" / "gateway-access.log").read_text().splitlines()[since:]
    fields = [dict(word.split("=", 1) for word in line.split() if "=" in word) for line in lines]
    return [(f.get("model", ""), f.get("member", ""), f.get("status", "")) for f in fields]


def _log_length(home: Path) -> int:
    return len((home / "team" / "logs" / "gateway-access.log").read_text().splitlines())


def test_each_request_goes_to_a_member_serving_its_model(office: lan.Lan, llama_server: Path, gemma_gguf: Path,
                                                          tmp_path: Path) -> None:
    m1, m2, gw, client = (office.hosts[n] for n in ("m1", "m2", "gateway", "client"))
    start_member(m1, llama_server, gemma_gguf, KEYS["m1"], tmp_path / "m1.log", (*MEMBER_ARGS, "--alias", GEMMA))
    start_router_member(m2, llama_server, _router_sections(gemma_gguf, tmp_path), KEYS["m2"], tmp_path / "m2.log",
                        tmp_path)
    for host in (m1, m2):
        wait_ready(client, f"{member_url(host)}/health")
    home = tmp_path / "gateway home"
    for name, key in KEYS.items():
        (tmp_path / f"{name}-key").write_text(key + "\n")
    added = kit(gw, home, "team", "add-member", member_url(m1), "--key-file", str(tmp_path / "m1-key"), "--name", "m1")
    assert added.returncode == 0, added.stderr
    assert f"serves {GEMMA}: 2 slots" in added.stderr
    # A router member: understood, each model with its slots (before: exit 2, "slot count is unknown").
    router = kit(gw, home, "team", "add-member", member_url(m2), "--key-file", str(tmp_path / "m2-key"), "--name", "m2")
    assert router.returncode == 0, router.stderr
    assert f"serves {GEMMA}: 1 slots" in router.stderr and "serves tiny-embed: 2 slots" in router.stderr
    assert "serves tiny-vision: 4 slots" in router.stderr  # no -np: llama-server's own default
    alice = kit(gw, home, "team", "add-user", "alice").stdout.strip()
    started = kit(gw, home, "team", "start", "--host", gw.address, "--port", str(GATEWAY_PORT))
    assert started.returncode == 0, started.stderr
    assert f"requests that name no model go to {GEMMA}" in started.stderr  # served by both members
    url = f"http://{gw.address}:{GATEWAY_PORT}"
    try:
        # /v1/models: the union, names only (before: one member's list, each with its command line and paths).
        status, text = call(client, "GET", f"{url}/v1/models", alice)
        assert status == 200
        assert sorted(m["id"] for m in json.loads(text)["data"]) == sorted([GEMMA, "tiny-embed", "tiny-vision"])
        assert str(tmp_path) not in text and "args" not in text and "preset" not in text and "--" not in text
        assert call(client, "GET", f"{url}/v1/models", "none")[0] == 401
        # Embeddings only m2 serves: every request answered there (before: every other one got 501 from m1).
        seen = _log_length(home)
        for _ in range(4):
            status, text = call(client, "POST", f"{url}/v1/embeddings", alice, {"model": "tiny-embed", "input": "hi"})
            assert status == 200, text
            assert len(json.loads(text)["data"][0]["embedding"]) == 128
        # An image, for the vision model only m2 has.
        image = "data:image/png;base64," + base64.b64encode(tiny_png(20, 12)).decode()
        status, text = call(client, "POST", f"{url}/v1/chat/completions", alice, {
            "model": "tiny-vision", "max_tokens": 4, "messages": [{"role": "user", "content": [
                {"type": "text", "text": "What is in this picture?"},
                {"type": "image_url", "image_url": {"url": image}}]}]})
        assert status == 200, text
        assert json.loads(text)["usage"]["prompt_tokens"] > 16
        assert {(model, member) for model, member, _ in _members_of(home, seen)} == {("tiny-embed", "m2"),
                                                                                     ("tiny-vision", "m2")}
        # Gemma, named and unnamed, on both members (a request naming no model gets the default model's name
        # written in: m2, a router, would answer 400 "model name is missing" without it).
        seen = _log_length(home)
        chat = {"max_tokens": 4, "messages": [{"role": "user", "content": "Say hello."}]}
        for body in [{**chat, "model": GEMMA}] * 3 + [chat] * 3:
            status, text = call(client, "POST", f"{url}/v1/chat/completions", alice, body)
            assert status == 200, text
        served = _members_of(home, seen)
        assert {model for model, _, _ in served} == {GEMMA} and {member for _, member, _ in served} == {"m1", "m2"}
        # A model no member serves: 404 from the gateway, in OpenAI's shape.
        status, text = call(client, "POST", f"{url}/v1/chat/completions", alice, {**chat, "model": "qwen-nope"})
        assert status == 404
        error = json.loads(text)["error"]
        assert error["code"] == "model_not_found" and "qwen-nope" in error["message"] and GEMMA in error["message"]
        # A member's settings without its paths; its model management is not the team's.
        status, text = call(client, "GET", f"{url}/props?model=tiny-embed", alice)
        assert status == 200 and str(tmp_path) not in text
        assert json.loads(text)["model_path"] == "tiny-embed.gguf"
        assert call(client, "POST", f"{url}/models/unload", alice, {"model": GEMMA})[0] == 403
        # status: busy/slots per model.
        shown = kit(gw, home, "team", "status")
        assert shown.returncode == 0, shown.stderr
        lines = shown.stdout.splitlines()
        assert any(line.split()[:3] == ["tiny-embed", "busy/slots", "0/2"] and "loaded" in line for line in lines)
        assert any(line.split()[:3] == [GEMMA, "busy/slots", "0/1"] for line in lines)
        assert f"Requests that name no model: {GEMMA}" in shown.stdout
    finally:
        assert kit(gw, home, "team", "stop").returncode == 0
