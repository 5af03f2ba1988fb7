"""Templating for every stage that writes text files: one Jinja environment over ``templates/`` and the quoting filters.

All script and unit-file text lives in ``templates/``; Python passes values. Each target language has its own
quoting rules, so each gets a filter, and a value a language cannot carry safely (a newline in a shell word, a
double quote in a batch value) is refused rather than mangled:

- ``sh``: POSIX shell word (``shlex.quote``: single quotes, ``'`` written as ``'"'"'``).
- ``systemd``: one ExecStart/Environment word — double-quoted; ``\\`` and ``"`` backslash-escaped; ``%`` doubled
  (specifier expansion, systemd.unit(5) "Specifiers"); ``$`` doubled (variable expansion, systemd.service(5)
  "Command lines").
- ``ps``: one PowerShell word — single-quoted, ``'`` doubled (about_Quoting_Rules: nothing else is special in a
  single-quoted string).
- ``bat``: text inside a double-quoted cmd.exe argument — ``%`` doubled (batch files expand ``%…%`` even inside
  quotes); ``"`` cannot be escaped inside quotes and is refused (it is not a legal Windows file-name character
  anyway); ``!`` is only special with delayed expansion, which the templates switch off; ``&``, ``|``, ``^``, ``<``,
  ``>`` are literal inside quotes.
- ``js``: a JavaScript literal (the team gateway's routing script): JSON with every non-ASCII character written as
  ``\\uXXXX``, so U+2028/U+2029 (line terminators inside a JS string before ES2019) and any other text arrive intact.
- ``nginx_json``: a JSON document as the text of an nginx single-quoted string (``return 200 '…'``): JSON with
  every non-ASCII character, ``$`` (a variable to nginx) and ``'`` written as ``\\uXXXX``, then each backslash
  doubled (nginx's parser reads ``\\\\`` as one); refused above 3,000 characters (nginx reads a token of at most
  4,096 bytes, ``NGX_CONF_BUFFER`` in ``src/core/ngx_conf_file.c``).
- XML and plist templates are autoescaped (``&``, ``<``, ``>``, quotes).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.resources import resource_dir

AUTOESCAPE_SUFFIXES = ("xml", "plist", "xml.j2", "plist.j2")


class QuotingError(ValueError):
    """A value that cannot be written safely in the target language (a bug or hostile input upstream)."""


def _no_newline(value: str, language: str) -> str:
    if "\n" in value or "\r" in value or "\0" in value:
        raise QuotingError(f"{language}: a value holds a line break or NUL: {value!r}")
    return value


def sh_quote(value: object) -> str:
    """One POSIX shell word."""
    return shlex.quote(_no_newline(str(value), "sh"))


def systemd_quote(value: object) -> str:
    """One word of a systemd ``ExecStart=`` / ``Environment=`` line."""
    text = _no_newline(str(value), "systemd")
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return f'"{text}"'


def ps_quote(value: object) -> str:
    """One PowerShell word (a single-quoted string)."""
    return "'" + _no_newline(str(value), "ps").replace("'", "''") + "'"


def js_literal(value: object) -> str:
    """A JavaScript expression for ``value`` (JSON data: dicts, lists, strings, numbers, None)."""
    return json.dumps(value, ensure_ascii=True, sort_keys=True)


NGINX_TOKEN_MOST = 3000


def nginx_json(value: object) -> str:
    """``value`` as JSON text to place between single quotes in nginx's configuration."""
    text = json.dumps(value, ensure_ascii=True, separators=(",", ":")).replace("$", "\\u0024").replace("'", "\\u0027")
    if len(text) > NGINX_TOKEN_MOST:
        raise QuotingError(f"nginx: a JSON text of {len(text)} characters is longer than one token may be")
    return text.replace("\\", "\\\\")


def bat_text(value: object) -> str:
    """Text to place between double quotes in a batch file (the template writes the quotes)."""
    text = _no_newline(str(value), "bat")
    if '"' in text:
        raise QuotingError(f'bat: a value holds a double quote: {text!r}')
    # Backslashes before the closing quote escape it in the Windows argument rules (CommandLineToArgvW): "C:\d\"
    # reads as C:\d". Doubling a trailing run keeps the value intact.
    text = re.sub(r"(\\+)$", r"\1\1", text)
    return text.replace("%", "%%")


@lru_cache(maxsize=4)
def _environment(templates: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates)),
        autoescape=jinja2.select_autoescape(enabled_extensions=AUTOESCAPE_SUFFIXES, default_for_string=False),
        undefined=jinja2.StrictUndefined,  # a missing value is a bug, never an empty string in a script
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # tojson (Python/JSON literals in agent.py, snippets): keep Chinese readable; astral characters stay intact.
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "ensure_ascii": False}
    env.filters["sh"] = sh_quote
    env.filters["systemd"] = systemd_quote
    env.filters["bat"] = bat_text
    env.filters["ps"] = ps_quote
    env.filters["js"] = js_literal
    env.filters["nginx_json"] = nginx_json
    return env


def environment(templates: Path | None = None) -> jinja2.Environment:
    """The shared environment (cached per templates folder)."""
    return _environment(Path(templates) if templates else resource_dir("templates"))


def render_template(name: str, templates: Path | None = None, **values: Any) -> str:
    """Render ``templates/<name>`` with ``values``."""
    return environment(templates).get_template(name).render(**values)


@dataclass(frozen=True)
class RenderedFile:
    """A file as the kit renders it: its text and how it is written. ``data`` is the exact bytes, so what is on disk
    can be compared with what the kit would write now (``register/rendered_check.py``)."""

    path: Path
    text: str
    newline: str = "\n"
    encoding: str = "utf-8"
    mode: int = 0o644

    @property
    def data(self) -> bytes:
        text = self.text.replace("\r\n", "\n")
        if self.newline != "\n":
            text = text.replace("\n", self.newline)
        return text.encode(self.encoding)

    def write(self) -> None:
        """Atomically, its folder made when missing."""
        write_atomic(self.path, self.data, mode=self.mode)

    def on_disk(self) -> bool:
        """Whether the file holds exactly these bytes (a missing or unreadable file does not)."""
        try:
            with open(self.path, "rb") as handle:
                return handle.read(len(self.data) + 1) == self.data
        except OSError:
            return False


def write_rendered(path: Path, text: str, *, newline: str = "\n", encoding: str = "utf-8",
                   mode: int = 0o644) -> None:
    """Write rendered text atomically with the line endings the target wants (``\\r\\n`` for .bat and Windows XML)."""
    RenderedFile(path, text, newline, encoding, mode).write()
