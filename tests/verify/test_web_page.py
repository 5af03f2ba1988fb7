"""The chat page check (``bootstrap/verify/web_page.py``) against the test bed's real llama-server, whose web UI is
built in (``tests/support/testbed.py``), run with ``--api-key`` as installs run it; with ``--no-ui`` (what a build
without the UI answers: 404 at ``/``); and against a loopback stand-in for the llama.cpp #24573 regression (hashed
assets 401 under ``--api-key``), a build that cannot be had here."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bootstrap.core.console import t
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.verify import web_page
from bootstrap.verify.web_page import check_web_page, open_web_ui, page_assets, web_page_lines
from tests.support.llama import LlamaServer, free_port
from tests.support.tiny_gguf import write_model

KEY = "sk-qwenkit-web-page-test"
ARGS = ["-c", "256", "-np", "1", "-t", "2"]

pytestmark = pytest.mark.usefixtures("english")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_model("llama", tmp_path_factory.mktemp("tiny") / "tiny.gguf")


def _spec(home: Path, port: int) -> LaunchSpec:
    return LaunchSpec(home=home, system="Linux", engine_dir=home, server=home / "llama-server", model=home / "m.gguf",
                      mmproj=None, args=(), alias="qwen-local", api_key_file=home / "secrets" / "api-key", port=port)


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """URLs handed to the browser (there is no desktop browser to open here)."""
    urls: list[str] = []
    monkeypatch.setattr(web_page.webbrowser, "open", lambda url: urls.append(url) or True)
    return urls


def test_the_built_in_page_loads_under_the_key(llama_server: Path, tiny: Path, tmp_path: Path,
                                               opened: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with LlamaServer(llama_server, tiny, ARGS, api_key=KEY) as srv:
        spec = _spec(tmp_path, srv.port)
        page = check_web_page(spec)
        assert page.loads and page.url == f"{srv.base_url}/" and page.reason == ""
        import requests

        html = requests.get(f"{srv.base_url}/", timeout=10).text
        assert any("/_app/immutable/" in url for url in page_assets(html, f"{srv.base_url}/"))
        assert open_web_ui(spec, page) is True
    assert opened == [f"{srv.base_url}/"]
    lines = web_page_lines(page, str(spec.api_key_file))
    assert lines[0] == f"Chat in a browser: {srv.base_url}/"
    assert "'Enter API Key'" in lines[1] and "Settings > General > API Key" in lines[1]
    assert str(spec.api_key_file) in lines[1]
    assert KEY not in " ".join(lines) + capsys.readouterr().err


def test_a_server_without_the_page_is_not_opened(llama_server: Path, tiny: Path, tmp_path: Path,
                                                 opened: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with LlamaServer(llama_server, tiny, [*ARGS, "--no-ui"], api_key=KEY) as srv:
        spec = _spec(tmp_path, srv.port)
        page = check_web_page(spec)
        assert not page.loads and page.reason == t("verify.web_none")
        assert open_web_ui(spec) is False
    assert opened == []
    assert "not opening the chat page: this llama-server build has no web page; use the API" in capsys.readouterr().err
    assert web_page_lines(page, "k") == ["No chat page in the browser: this llama-server build has no web page; "
                                         "use the API"]


class _Regression(http.server.BaseHTTPRequestHandler):
    """llama.cpp #24573 as a browser met it: ``/`` served, its hashed bundle answered 401 (a blank page)."""

    def do_GET(self) -> None:
        if self.path == "/":
            body = b'<html><head><script type="module" src="./_app/immutable/bundle.Ab12.js"></script></head></html>'
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
        else:
            body = b'{"error":{"message":"Invalid API Key","type":"authentication_error","code":401}}'
            self.send_response(401)
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def regression_port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Regression)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def test_a_page_whose_files_need_the_key_is_a_blank_page(regression_port: int, tmp_path: Path,
                                                         opened: list[str]) -> None:
    spec = _spec(tmp_path, regression_port)
    page = check_web_page(spec)
    assert not page.loads
    assert page.reason == t("verify.web_asset", status=401, path="/_app/immutable/bundle.Ab12.js")
    assert open_web_ui(spec, page) is False and opened == []


def test_nothing_listening_is_a_reason_not_a_traceback(tmp_path: Path) -> None:
    page = check_web_page(_spec(tmp_path, free_port()), timeout=1)
    assert not page.loads and page.reason == t("verify.web_no_answer", detail=t("health.down_refused"))


def test_page_assets_are_the_same_origin_scripts_and_styles() -> None:
    html = ('<link rel="stylesheet" href="./_app/immutable/bundle.c1.css"><script src="/x/a.js"></script>'
            '<script src="https://cdn.example/y.js"></script><link rel="icon" href="favicon.svg">'
            '<script src="./_app/immutable/bundle.c1.css"></script>')
    assert page_assets(html, "http://127.0.0.1:8080/") == ["http://127.0.0.1:8080/_app/immutable/bundle.c1.css",
                                                          "http://127.0.0.1:8080/x/a.js"]
