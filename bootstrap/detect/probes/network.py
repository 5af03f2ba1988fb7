"""Proxy and CA settings (docs/field-failures.md, failure mode 3: corporate proxies and TLS interception), and for
``doctor`` whether each download source really answers.

Reported, never changed: downloads honour ``HTTPS_PROXY``/``NO_PROXY`` and verify TLS against the OS store through
truststore (pip does the same since 24.2). Proxy credentials are redacted so a shared report leaks no password.

The reachability probe (``read_reach``) is the standard library's ``http.client``: one ``HEAD /`` per source, through
the proxy's ``CONNECT`` tunnel when ``HTTPS_PROXY`` applies (``HTTPConnection.set_tunnel``), TLS verified as
downloads verify it. Any HTTP answer means reachable; a failure is named by ``core.net_causes``. Every source is
probed at once and the whole probe is bounded by ``REACH_BUDGET``, so a machine with no network waits seconds.
"""

from __future__ import annotations

import http.client
import ssl
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from bootstrap.core import settings
from bootstrap.core.display_text import masked_url
from bootstrap.core.net_causes import cause_of
from bootstrap.core.settings import first_set
from bootstrap.detect.hardware import NetworkInfo, SourceReach

REACH_TIMEOUT = 3.0  # seconds per socket operation, as the downloads' connect budget
REACH_BUDGET = 3.5  # seconds for the whole probe, all sources together

# Where Linux distributions keep the system bundle (truststore reads the same files through OpenSSL).
_LINUX_CA_FILES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
                   "/etc/ssl/ca-bundle.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem")


@dataclass(frozen=True)
class NetworkReadings:
    env: Mapping[str, str]  # only the proxy/CA variables are read
    truststore: bool
    reach: tuple[SourceReach, ...] = ()  # measured by ``read_reach`` (doctor), already a record


def _masked(url: str | None) -> str | None:
    return None if url is None else masked_url(url)


def probe_network(r: NetworkReadings) -> NetworkInfo:
    env = r.env
    return NetworkInfo(https_proxy=_masked(first_set(env, "HTTPS_PROXY", "https_proxy")),
                       http_proxy=_masked(first_set(env, "HTTP_PROXY", "http_proxy")),
                       no_proxy=first_set(env, "NO_PROXY", "no_proxy"),
                       ca_bundle=first_set(env, "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"),
                       truststore=r.truststore, sources=r.reach)


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


def read_network(env: Mapping[str, str], reach: bool = False) -> NetworkReadings:
    """The proxy/CA variables and truststore; with ``reach`` also each source's reachability (``read_reach``)."""
    return read_network_later(env, reach)()


def read_network_later(env: Mapping[str, str], reach: bool = False) -> Callable[[], NetworkReadings]:
    """``read_network``, started now and collected by calling the result: the reachability probe's requests go
    out at once and the caller probes the rest of the machine meanwhile (``probes.read_all``), so an install that
    is told whether any source answers before it asks to continue waits for it only as long as the slowest
    source takes beyond the other probes (at most ``REACH_BUDGET``)."""
    keys = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy", "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
    usable = truststore_usable()
    found = start_reach(env, usable) if reach else tuple
    return lambda: NetworkReadings(env={k: env[k] for k in keys if k in env}, truststore=usable, reach=found())


def source_endpoints(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(name, endpoint)`` of every download source the settings name: HF, its mirrors, ModelScope."""
    hf = settings.hf_endpoint(env)
    mirrors = [(urlsplit(u).netloc.rpartition("@")[2] or u, u) for u in settings.hf_mirrors(env) if u != hf]
    return [("hf", hf), *mirrors, ("modelscope", settings.modelscope_endpoint(env))]


def _tls_context(env: Mapping[str, str], use_truststore: bool) -> ssl.SSLContext:
    cafile = first_set(env, "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")
    if cafile:
        return ssl.create_default_context(cafile=cafile)
    if use_truststore:
        import truststore

        return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return ssl.create_default_context()


def _connection(url: str, env: Mapping[str, str],
                context: ssl.SSLContext) -> tuple[http.client.HTTPConnection, str]:
    """A connection to ``url``'s origin and the request target: through ``HTTPS_PROXY`` (a ``CONNECT`` tunnel, then
    TLS with the source itself) or ``HTTP_PROXY`` (an absolute URL) unless ``NO_PROXY`` names the host."""
    parts = urlsplit(url)
    host, secure = parts.hostname or "", parts.scheme == "https"
    port = parts.port or (443 if secure else 80)
    proxy = first_set(env, "HTTPS_PROXY", "https_proxy") if secure else first_set(env, "HTTP_PROXY", "http_proxy")
    bypass = urllib.request.proxy_bypass_environment(host, {"no": first_set(env, "NO_PROXY", "no_proxy") or ""})
    if proxy and not bypass:
        via = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if secure:
            conn = http.client.HTTPSConnection(via.hostname or "", via.port or 80, timeout=REACH_TIMEOUT,
                                               context=context)
            conn.set_tunnel(host, port)
            return conn, "/"
        return http.client.HTTPConnection(via.hostname or "", via.port or 80, timeout=REACH_TIMEOUT), f"{url}/"
    if secure:
        return http.client.HTTPSConnection(host, port, timeout=REACH_TIMEOUT, context=context), "/"
    return http.client.HTTPConnection(host, port, timeout=REACH_TIMEOUT), "/"


def _reach_one(name: str, url: str, env: Mapping[str, str], context: ssl.SSLContext) -> SourceReach:
    host = urlsplit(url).netloc.rpartition("@")[2]
    start = time.monotonic()
    conn = None
    try:
        conn, target = _connection(url, env, context)
        conn.request("HEAD", target, headers={"User-Agent": "qwenclientkit-doctor"})
        conn.getresponse().close()
    except (OSError, http.client.HTTPException, ValueError) as exc:
        kind = cause_of(exc).kind
        return SourceReach(name, host, kind if kind in ("dns", "timeout", "refused", "unreachable", "tls")
                           else "error")
    finally:
        if conn is not None:
            conn.close()
    return SourceReach(name, host, "reachable", round((time.monotonic() - start) * 1000))


def read_reach(env: Mapping[str, str], use_truststore: bool = True) -> tuple[SourceReach, ...]:
    """Probe every source at once; one still silent after ``REACH_BUDGET`` seconds is a ``timeout`` (its daemon
    thread is left behind, never waited for)."""
    return start_reach(env, use_truststore)()


def start_reach(env: Mapping[str, str], use_truststore: bool = True) -> Callable[[], tuple[SourceReach, ...]]:
    """``read_reach`` started now; calling the result waits for it, until ``REACH_BUDGET`` after the start."""
    targets = source_endpoints(env)
    try:
        context = _tls_context(env, use_truststore)
    except (OSError, ssl.SSLError, ImportError):
        context = ssl.create_default_context()
    found: dict[int, SourceReach] = {}
    threads = [threading.Thread(target=lambda i=i, n=n, u=u: found.__setitem__(i, _reach_one(n, u, env, context)),
                                name=f"reach-{n}", daemon=True) for i, (n, u) in enumerate(targets)]
    deadline = time.monotonic() + REACH_BUDGET
    for thread in threads:
        thread.start()

    def result() -> tuple[SourceReach, ...]:
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return tuple(dict(found).get(i) or SourceReach(n, urlsplit(u).netloc.rpartition("@")[2], "timeout")
                     for i, (n, u) in enumerate(targets))

    return result
