"""``unreachable``: one line naming the source, its host and the cause; ways out in the hint; en and zh."""

from __future__ import annotations

import socket

import pytest
import requests

from bootstrap.core import console
from bootstrap.fetch.records import Source, unreachable

HF = Source("hf", "hf", "https://huggingface.co", "Qwen/X")


@pytest.mark.parametrize(("lang", "line", "hint_words"), [
    ("en", "cannot reach hf (huggingface.co): DNS lookup failed (no network, or the name is blocked)",
     ("--source modelscope", "QWENKIT_HF_MIRRORS", "HF_ENDPOINT", "HTTPS_PROXY", "--bundle")),
    ("zh", "无法连接下载源 hf（huggingface.co）：域名解析失败（没有网络，或该域名被屏蔽）",
     ("--source modelscope", "QWENKIT_HF_MIRRORS", "HTTPS_PROXY", "--bundle")),
])
def test_dns_failure_line(monkeypatch: pytest.MonkeyPatch, lang: str, line: str, hint_words: tuple[str, ...]) -> None:
    monkeypatch.setattr(console, "language", lambda: lang)
    error = unreachable(HF, requests.ConnectionError(socket.gaierror(-3, "Temporary failure in name resolution")))
    assert error.message == line
    assert all(w in (error.hint or "") for w in hint_words)
    assert "resume" not in (error.hint or "") and "续传" not in (error.hint or "")


def test_raw_pool_text_never_shown() -> None:
    raw = ("HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded with url: /api/models/Qwen/X "
           "(Caused by ConnectTimeoutError(<urllib3.connection.HTTPSConnection object>, 'Connection timed out'))")
    error = unreachable(HF, requests.ConnectTimeout(raw))
    assert "HTTPSConnectionPool" not in error.message and "no answer within 3 s" in error.message


def test_tls_interception_points_at_the_ca_bundle() -> None:
    error = unreachable(HF, requests.exceptions.SSLError("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"))
    assert "intercepts TLS" in error.message and "SSL_CERT_FILE" in (error.hint or "")
