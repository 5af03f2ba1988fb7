"""Proxy and CA settings (docs/field-failures.md, failure mode 3: corporate proxies and TLS interception).

Reported, never changed: downloads honour ``HTTPS_PROXY``/``NO_PROXY`` and verify TLS against the OS store through
truststore (pip does the same since 24.2). Proxy credentials are redacted so a shared report leaks no password.
"""

from __future__ import annotations

import ssl
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bootstrap.core.display_text import masked_url
from bootstrap.core.settings import first_set
from bootstrap.detect.hardware import NetworkInfo

# Where Linux distributions keep the system bundle (truststore reads the same files through OpenSSL).
_LINUX_CA_FILES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
                   "/etc/ssl/ca-bundle.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem")


@dataclass(frozen=True)
class NetworkReadings:
    env: Mapping[str, str]  # only the proxy/CA variables are read
    truststore: bool


def _masked(url: str | None) -> str | None:
    return None if url is None else masked_url(url)


def probe_network(r: NetworkReadings) -> NetworkInfo:
    env = r.env
    return NetworkInfo(https_proxy=_masked(first_set(env, "HTTPS_PROXY", "https_proxy")),
                       http_proxy=_masked(first_set(env, "HTTP_PROXY", "http_proxy")),
                       no_proxy=first_set(env, "NO_PROXY", "no_proxy"),
                       ca_bundle=first_set(env, "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"),
                       truststore=r.truststore)


def truststore_usable() -> bool:
    """Whether truststore builds a client context and, on Linux, an OS bundle exists for it to load."""
    try:
        import truststore

        truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    except (ImportError, ssl.SSLError, OSError, NotImplementedError):
        return False
    if sys.platform.startswith("linux"):
        paths = ssl.get_default_verify_paths()
        candidates = [p for p in (paths.cafile, paths.openssl_cafile) if p] + list(_LINUX_CA_FILES)
        return any(Path(p).is_file() for p in candidates)
    return True


def read_network(env: Mapping[str, str]) -> NetworkReadings:
    keys = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
    return NetworkReadings(env={k: env[k] for k in keys if k in env}, truststore=truststore_usable())
