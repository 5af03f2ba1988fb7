"""First-start checks of the frozen setup: what a PyInstaller build can get wrong, found before anything is installed.

A frozen binary carries its own copies of ``templates/``, ``payload/``, Jinja and OpenSSL; a build that dropped
one of them (a wrong ``--add-data``, an over-eager ``--exclude-module``, a bundled OpenSSL that looks for CA
certificates where this machine has none) would otherwise fail half-way through an install. Each check reads only
local files: no network. A problem here is a broken build (exit 1), reported as one line and a hint each.
"""

from __future__ import annotations

import re
import ssl
import sys
from dataclasses import dataclass
from pathlib import Path

from bootstrap.catalog.engine_pins import load_pins
from bootstrap.catalog.models import load_catalog
from bootstrap.core.console import t
from bootstrap.core.errors import QwenKitError
from bootstrap.core.resources import ResourceName, resource_dir
from bootstrap.core.templating import QuotingError, environment
from bootstrap.place.runtime_venv import requirement_names

# The start scripts every install renders (bootstrap/render/start_scripts.py); the setup is useless without them.
REQUIRED_TEMPLATES = ("run_qwen.sh.j2", "run_qwen.bat.j2")
REQUIRED_PAYLOAD = ("catalog.toml", "engines.toml", "requirements.txt")
# OpenSSL's c_rehash names (``<subject hash>.<n>``): how a CA directory holds certificates it loads on demand.
_HASHED_CERT_RE = re.compile(r"^[0-9a-fA-F]{8}\.[0-9]$")
# The bundle files truststore falls back to on Linux when OpenSSL's defaults hold nothing (truststore/_openssl.py).
_FALLBACK_CA_FILES = ("/etc/ssl/cert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/pki/tls/cert.pem",
                      "/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/ca-bundle.pem")


@dataclass(frozen=True)
class Problem:
    """One failed check: what is wrong (one line) and what to do about it."""

    what: str
    hint: str


def _folder(name: ResourceName, required: tuple[str, ...]) -> tuple[Path | None, list[Problem]]:
    try:
        folder = resource_dir(name)
    except QwenKitError as exc:
        return None, [Problem(t("setup.resource_missing", name=name, detail=exc.message), t("setup.hint_rebuild"))]
    missing = [Problem(t("setup.resource_file_missing", name=name, file=f, path=str(folder)), t("setup.hint_rebuild"))
               for f in required if not (folder / f).is_file()]
    return folder, missing


def check_templates() -> list[Problem]:
    """``templates/`` is found, holds the start-script templates, and Jinja compiles and renders them."""
    folder, problems = _folder("templates", REQUIRED_TEMPLATES)
    if folder is None or problems:
        return problems
    env = environment(folder)
    for name in REQUIRED_TEMPLATES:
        try:
            env.get_template(name)  # loads and compiles: the loader, the parser and every filter name it uses
        except Exception as exc:  # any Jinja or I/O failure means the same thing here: a broken build
            problems.append(Problem(t("setup.render_failed", name=name, detail=_detail(exc)), t("setup.hint_rebuild")))
    try:
        # Rendering runs Jinja's runtime and the quoting filters the templates rely on (bootstrap/core/templating.py).
        text = env.from_string("{{ v | sh }} {{ v | bat }} {{ v | systemd }}").render(v="a b%")
        if not text.strip():
            raise QuotingError("empty output")
    except Exception as exc:
        problems.append(Problem(t("setup.render_failed", name="sh/bat/systemd", detail=_detail(exc)),
                                t("setup.hint_rebuild")))
    return problems


def check_payload() -> list[Problem]:
    """``payload/`` is found and its catalog, engine pins and requirements parse."""
    folder, problems = _folder("payload", REQUIRED_PAYLOAD)
    if folder is None or problems:
        return problems
    for name, load in (("catalog.toml", load_catalog), ("engines.toml", load_pins)):
        try:
            load(folder / name)  # the shipped file itself, not a QWENKIT_CATALOG / QWENKIT_ENGINES override
        except QwenKitError as exc:
            problems.append(Problem(t("setup.payload_bad", file=name, detail=exc.message), t("setup.hint_rebuild")))
    try:
        names = requirement_names((folder / "requirements.txt").read_text(encoding="utf-8"))
        if not names:
            raise ValueError("no requirement in it")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        problems.append(Problem(t("setup.payload_bad", file="requirements.txt", detail=_detail(exc)),
                                t("setup.hint_rebuild")))
    return problems


def _hashed_certs(capath: str | None) -> int:
    if not capath or not Path(capath).is_dir():
        return 0
    return sum(1 for p in Path(capath).iterdir() if _HASHED_CERT_RE.match(p.name))


def check_tls(platform: str = sys.platform) -> list[Problem]:
    """The TLS context downloads use (``http_session.make_session``) can be made and has trust anchors.

    truststore picks its CA certificates when a connection is wrapped, so the context is wrapped over memory BIOs
    (no socket) first. On Linux truststore verifies with OpenSSL against the system bundle: the loaded CA count
    must be positive, or OpenSSL's CA directory must hold hashed certificates (loaded on demand, so not counted).
    On Windows and macOS it asks the OS to verify; Windows' ROOT store is counted, macOS has no offline count.
    """
    try:
        import truststore

        ctx = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.wrap_bio(ssl.MemoryBIO(), ssl.MemoryBIO(), server_hostname="localhost")
        if ctx.verify_mode != ssl.CERT_REQUIRED or not ctx.check_hostname:
            raise ssl.SSLError("certificate verification is not on")
    except (ImportError, ssl.SSLError, OSError, ValueError, NotImplementedError) as exc:
        return [Problem(t("setup.tls_failed", detail=_detail(exc)), t("setup.hint_tls"))]
    if platform == "darwin":
        return []
    if platform == "win32":
        try:
            roots = len(ssl.enum_certificates("ROOT"))  # type: ignore[attr-defined]  # Windows-only stdlib API
        except (AttributeError, OSError) as exc:
            return [Problem(t("setup.tls_failed", detail=_detail(exc)), t("setup.hint_tls"))]
        return [] if roots else [Problem(t("setup.tls_no_ca", where="Windows ROOT store"), t("setup.hint_tls"))]
    anchors, where = openssl_trust_anchors()
    return [] if anchors else [Problem(t("setup.tls_no_ca", where=where), t("setup.hint_tls"))]


def openssl_trust_anchors() -> tuple[int, str]:
    """(CA certificates OpenSSL will verify with, where they come from), chosen the way truststore does on Linux.

    truststore (``_openssl._configure_context``, 0.10) uses OpenSSL's default paths when the CA file exists or
    the CA directory holds hashed certificates, else the first well-known bundle file that exists. Its own context
    does not expose the loaded store, so a plain context is configured the same way and counted.
    """
    paths = ssl.get_default_verify_paths()  # honours SSL_CERT_FILE / SSL_CERT_DIR, as OpenSSL does
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    on_demand = _hashed_certs(paths.capath)
    if paths.cafile or on_demand:
        ctx.set_default_verify_paths()
        where = ", ".join(p for p in (paths.cafile, paths.capath) if p)
    else:
        found = next((f for f in _FALLBACK_CA_FILES if Path(f).is_file()), None)
        if found:
            ctx.load_verify_locations(cafile=found)
        where = found or ", ".join(_FALLBACK_CA_FILES)
    return ctx.cert_store_stats()["x509_ca"] or on_demand, where


def first_start_checks() -> list[Problem]:
    """Every check, in the order an install needs them; an empty list means the build is whole."""
    return [*check_templates(), *check_payload(), *check_tls()]


def _detail(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
