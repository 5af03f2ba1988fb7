"""The LAN of "machines" on this one (tests/support/lan.py): each host has its own address and its own loopback.

A real llama-server with a key on one host, bound to its LAN address: another host reaches it there (200 with the
key, 401 without), while this process (outside the LAN) does not; a second llama-server bound to the first host's
127.0.0.1 is not reachable from the other host's 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from tests.support import lan
from tests.support.offline import netns_available

pytestmark = [
    pytest.mark.skipif(not netns_available(), reason="unprivileged network namespaces are unavailable here"),
    pytest.mark.skipif(bool(lan.missing_tools()), reason=f"needs {', '.join(lan.missing_tools())}"),
]

KEY = "lan-test-key"
# One request from inside a host, printed as JSON: the status, or the error's class.
ASK = """
import json, sys, urllib.error, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + sys.argv[2]} if sys.argv[2] else {})
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
try:
    with opener.open(req, timeout=5) as resp:
        print(json.dumps(resp.status))
except urllib.error.HTTPError as exc:
    print(json.dumps(exc.code))
except OSError as exc:
    print(json.dumps(type(exc).__name__))
"""


def _ask(host: lan.Host, url: str, key: str = "") -> int | str:
    done = host.run([sys.executable, "-I", "-c", ASK, url, key], text=True)
    return json.loads(done.stdout)


def _serve(host: lan.Host, binary: Path, model: Path, bind: str, port: int) -> None:
    host.popen([str(binary), "-m", str(model), "--host", bind, "--port", str(port), "--api-key", KEY, "-c", "512",
                "-t", "1", "--log-disable"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
               stdin=subprocess.DEVNULL)


@pytest.fixture
def office() -> Iterator[lan.Lan]:
    with lan.lan("member", "client") as net:
        yield net


def test_hosts_reach_each_other_on_the_lan_and_keep_their_loopback(office: lan.Lan, llama_server: Path,
                                                                  tmp_path: Path) -> None:
    from tests.support.install_bed import MODEL_FILE, write_chat_model

    member, client = office.hosts["member"], office.hosts["client"]
    assert member.address != client.address
    model = write_chat_model(tmp_path / MODEL_FILE)
    _serve(member, llama_server, model, member.address, 8080)
    _serve(member, llama_server, model, "127.0.0.1", 8081)
    url = f"http://{member.address}:8080/v1/models"
    deadline = time.monotonic() + 120
    while _ask(client, url, KEY) != 200 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _ask(client, url, KEY) == 200
    assert _ask(client, url) == 401
    assert _ask(member, "http://127.0.0.1:8081/v1/models", KEY) == 200  # the member's own loopback
    assert _ask(client, "http://127.0.0.1:8081/v1/models", KEY) == "URLError"  # not the client's
    assert _outside(url) not in (200, 401)  # this machine is not on that LAN


def _outside(url: str) -> int | str:
    """What this process gets from ``url``: no answer, or (where the machine's default route ends at a filtering
    gateway, as on the CI machines) that gateway's own error, never llama-server's 200 or 401."""
    with requests.Session() as session:
        session.trust_env = False
        try:
            return session.get(url, headers={"Authorization": f"Bearer {KEY}"}, timeout=3).status_code
        except requests.RequestException as exc:
            return type(exc).__name__
