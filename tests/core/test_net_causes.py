"""Network failures classified from the exceptions requests/urllib3/httpx/ssl/socket really raise."""

from __future__ import annotations

import socket
import ssl

import pytest
import requests
import urllib3.exceptions

from bootstrap.core.net_causes import NetCause, cause_of


def _requests_dns() -> BaseException:
    """requests' shape for a failed lookup: ConnectionError(MaxRetryError(reason=NameResolutionError)) <- gaierror."""
    gai = socket.gaierror(-3, "Temporary failure in name resolution")
    try:
        raise urllib3.exceptions.NameResolutionError("huggingface.co", None, gai) from gai  # type: ignore[arg-type]
    except urllib3.exceptions.NameResolutionError as inner:
        retry = urllib3.exceptions.MaxRetryError(None, "/api/models/x", inner)  # type: ignore[arg-type]
    return requests.ConnectionError(retry)


def test_a_failed_lookup_deep_in_requests_is_dns() -> None:
    assert cause_of(_requests_dns()) == NetCause("dns")


@pytest.mark.parametrize(("exc", "kind"), [
    (requests.ConnectTimeout("HTTPSConnectionPool(host='huggingface.co', port=443): Max retries exceeded"), "timeout"),
    (TimeoutError("timed out"), "timeout"),
    (ConnectionRefusedError(111, "Connection refused"), "refused"),
    (OSError(101, "Network is unreachable"), "unreachable"),
    (ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"), "tls"),
    (requests.exceptions.SSLError("certificate verify failed: self-signed certificate in chain"), "tls"),
    (socket.gaierror(8, "nodename nor servname provided, or not known"), "dns"),
    (ValueError("HTTP 503 for https://modelscope.cn/api/v1/models/x"), "http"),
    (ValueError("no commit in the answer"), "other"),
])
def test_causes(exc: BaseException, kind: str) -> None:
    assert cause_of(exc).kind == kind


def test_http_status_comes_from_the_response() -> None:
    response = requests.Response()
    response.status_code = 403
    assert cause_of(requests.HTTPError("Forbidden", response=response)) == NetCause("http", 403)
