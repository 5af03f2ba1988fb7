"""Addresses llama.cpp's RPC protocol may use: private or loopback IPs only, for the worker and the head alike.

The protocol has no authentication and no encryption, and its history has remote-code-execution fixes (llama.cpp
``tools/rpc/README.md``: "Never run the RPC server on an open network"; PR #20908). So a worker binds, and a head
connects to, only an address that stays inside a private network: RFC 1918, 100.64/10 (RFC 6598 shared space, as
WireGuard/Tailscale overlays use it), IPv6 unique-local or link-local, or loopback (an SSH ``-L`` tunnel).
"""

from __future__ import annotations

import ipaddress

from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.input_checks import decimal_int

_SHARED = ipaddress.ip_network("100.64.0.0/10")  # RFC 6598: CGNAT space, which overlay VPNs use
MAX_WORKERS = 16  # more hops than any head gains from (llama.cpp PR #18626: a fourth device slowed it)


def check_private_ip(host: str) -> str:
    """``host`` as an RPC address: an IP address that is loopback or private; anything else is exit 2."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise UsageError(t("rpc.err_not_ip", host=host), t("rpc.hint_address")) from None
    if address.is_unspecified:
        raise UsageError(t("rpc.err_wildcard", host=host), t("rpc.hint_address"))
    private = address.is_loopback or address.is_link_local or (
        address.is_private and not address.is_multicast and not address.is_reserved) or (
        address.version == 4 and address in _SHARED)
    if not private:
        raise UsageError(t("rpc.err_public", host=host), t("rpc.hint_address"))
    return str(address)


def check_rpc_endpoints(text: str) -> tuple[str, ...]:
    """``install --rpc``'s "IP:PORT,IP:PORT" as the head passes it to ``llama-server --rpc``; exit 2 on a bad one.

    IPv4 only: llama.cpp splits an endpoint at its first ":" (ggml-rpc.cpp ``parse_endpoint``), so an IPv6 address
    cannot be named there (an SSH tunnel to 127.0.0.1 reaches an IPv6 worker). "none" is the empty list."""
    if text.strip().lower() == "none":
        return ()
    out: list[str] = []
    for item in (part.strip() for part in text.split(",")):
        host, sep, port_text = item.rpartition(":")
        port = decimal_int(port_text)
        if not sep or port is None or not 1 <= port <= 65535 or ":" in host:
            raise UsageError(t("rpc.err_endpoint", endpoint=item), t("rpc.hint_endpoint"))
        endpoint = f"{check_private_ip(host)}:{port}"
        if endpoint not in out:
            out.append(endpoint)
    if len(out) > MAX_WORKERS:
        raise UsageError(t("rpc.err_too_many", count=len(out), most=MAX_WORKERS), t("rpc.hint_endpoint"))
    return tuple(out)
