"""llama-server's own chat page: checked to load before the report, ``status`` or ``status --open`` mention it.

A llama-server build carries the page only when its web UI (llama.cpp ``tools/ui``) was built and embedded
(``scripts/ui-assets.cmake``); a build without it answers 404 at ``/``, and so does ``--no-ui``. The page and its
files are public even with ``--api-key``: ``tools/server/server-http.cpp`` adds ``/`` and every embedded asset to
its public endpoints. That was not always so (llama.cpp issue #24573: hashed UI assets answered 401 with
``--api-key``, a blank page), hence the check fetches the scripts and styles ``index.html`` names, without the key.
Assets are gzip-compressed in upstream's builds and answered 415 without ``Accept-Encoding: gzip``; requests sends
it, as every browser does.

The page asks for the key itself: at start it probes ``/props``, and the 401 shows an "Enter API Key" button
(``tools/ui/src/lib/utils/api-key-validation.ts``, ``.../components/app/server/ServerErrorSplash.svelte``); the key
lands in the page's settings ("API Key" under Settings, ``tools/ui/src/lib/constants/settings.constants.ts``),
kept in the browser's storage, so each browser enters it once.
"""

from __future__ import annotations

import re
import webbrowser
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import requests

from bootstrap.core.console import info, t, warn
from bootstrap.fetch.http_session import local_session
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.server_health import why_down

CHECK_TIMEOUT_S = 3.0  # per request: a local server answers at once; status stays quick when it does not
MAX_ASSETS = 8  # index.html names a handful (one bundle each of JS and CSS, icons); enough to catch a blank page
_ASSET = re.compile(r"""(?:src|href)\s*=\s*["']([^"'#?]+\.(?:js|css))["']""", re.IGNORECASE)


@dataclass(frozen=True)
class WebPage:
    """Whether the chat page at ``url`` loads; ``reason`` says why not, in the user's language."""

    url: str
    loads: bool
    reason: str = ""

    def to_json(self) -> dict[str, object]:
        return {"url": self.url, "loads": self.loads, "reason": self.reason}


def page_assets(html: str, page_url: str) -> list[str]:
    """The same-origin scripts and styles ``html`` loads, as absolute URLs (first ``MAX_ASSETS``)."""
    origin = urlsplit(page_url).netloc
    urls: list[str] = []
    for ref in _ASSET.findall(html):
        url = urljoin(page_url, ref)
        if urlsplit(url).netloc == origin and url not in urls:
            urls.append(url)
    return urls[:MAX_ASSETS]


def check_web_page(spec: LaunchSpec, *, timeout: float = CHECK_TIMEOUT_S) -> WebPage:
    """GET ``/`` (200 ``text/html``) and the files it names (200), without the key; bounded by ``timeout`` each."""
    url = f"{spec.base_url}/"
    shown = f"{spec.client_base_url}/"
    try:
        with local_session() as session:
            page = session.get(url, timeout=timeout)
            kind = page.headers.get("Content-Type", "")
            if page.status_code == 404:
                return WebPage(shown, False, t("verify.web_none"))
            if page.status_code != 200 or not kind.startswith("text/html"):
                return WebPage(shown, False, t("verify.web_odd", status=page.status_code, kind=kind or "-"))
            for asset in page_assets(page.text, url):
                with session.get(asset, timeout=timeout, stream=True) as resp:
                    if resp.status_code != 200:
                        return WebPage(shown, False, t("verify.web_asset", status=resp.status_code,
                                                       path=urlsplit(asset).path))
    except requests.RequestException as exc:
        return WebPage(shown, False, t("verify.web_no_answer", detail=why_down(exc, timeout)))
    return WebPage(shown, True)


def web_page_lines(page: WebPage, key_file: str) -> list[str]:
    """The report's lines: where to chat in a browser and how to give it the key, or why there is no page."""
    if page.loads:
        return [t("verify.web_page", url=page.url), t("verify.web_key", path=key_file)]
    return [t("verify.web_missing", reason=page.reason)]


def open_web_ui(spec: LaunchSpec, page: WebPage | None = None) -> bool:
    """Open the chat page in the browser when it loads (checked here unless ``page`` is given); else say why not.

    Said after the fact: ``webbrowser.open`` returns False where no browser can be started (SSH, WSL, a machine
    without a display), and then the user is told to open the address themselves instead of waiting for nothing."""
    page = page or check_web_page(spec)
    if not page.loads:
        warn(t("verify.not_opening", reason=page.reason))
        return False
    url = f"{spec.base_url}/"
    if webbrowser.open(url):
        info(t("open.opened", url=url))
        return True
    warn(t("open.no_browser", url=url))
    return False
