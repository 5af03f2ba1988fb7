"""The team gateway's record (``<home>/team/team.json``): its members, its users and where it listens.

It holds secrets (each member's API key, each user's key), so it is written atomically with owner-only
permissions, like ``secrets/api-key``. Every value that reaches the nginx configuration is checked here first, so
the template never has to quote anything: a member is ``http(s)://host:port`` with a host name or an IP address, a
key is one token of URL-safe characters, a member name is a short ASCII word. A user name may be any short word of
Unicode letters and digits (``张三``): it reaches nginx only percent-encoded (``nginx_name``), so the file and the
access log stay ASCII. Model names never reach the nginx file at all: the gateway's routing script gets them as
JSON (``templates/team-route.js.j2``).
"""

from __future__ import annotations

import json
import re
import secrets
import unicodedata
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.home import Home

SCHEMA = 1
FILE_MODE = 0o600
DIR_MODE = 0o700
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8090  # beside the server's 8080, so a gateway PC can also be a member
USER_KEY_PREFIX = "sk-team-"
MAX_SLOTS = 1024  # far above any PC's llama-server -np, far below what overflows nginx's weight
# Keys travel in an HTTP header and, for nginx, inside a quoted string: letters, digits and "-._~+/=" only
# (a "$" would be read as an nginx variable, a quote or ";" would end the directive).
_KEY = re.compile(r"[A-Za-z0-9._~+/=-]{16,512}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
_USER_PUNCTUATION = "._-"


@dataclass(frozen=True)
class ServedModel:
    """One model a member serves, as its llama-server names it; ``slots``: requests it takes at once (0: not
    known, counted as 1)."""

    id: str
    slots: int = 0
    aliases: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return (self.id, *self.aliases)


@dataclass(frozen=True)
class Member:
    """One member install: where its llama-server listens, its key, how many requests it serves at once, the
    models it serves (empty: not known yet, it was down when added) and the gateway's loopback port for it
    (``listener``; 0: none given yet)."""

    name: str
    url: str  # scheme://host:port, no path
    key: str
    slots: int
    models: tuple[ServedModel, ...] = ()
    listener: int = 0

    @property
    def address(self) -> str:
        """``host:port`` as nginx's ``server`` directive takes it."""
        return self.url.split("://", 1)[1]


@dataclass
class Team:
    """The whole record; ``members`` keep the order they were added in, ``users`` map a name to its key."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    members: list[Member] = field(default_factory=list)
    users: dict[str, str] = field(default_factory=dict)
    nginx: str = ""  # the nginx given with --nginx at start, used again by reloads and stop ("": found on PATH)
    default_model: str = ""  # what a request without "model" gets ("": chosen by team.routes.default_model)

    def member(self, name_or_url: str) -> Member | None:
        wanted = name_or_url.rstrip("/")
        return next((m for m in self.members if wanted in (m.name, m.url)), None)

    def user_of_key(self, key: str) -> str | None:
        return next((name for name, k in self.users.items() if secrets.compare_digest(k, key)), None)


def record_file(home: Home) -> Path:
    return home.team_dir / "team.json"


def member_url(text: str) -> str:
    """``text`` as a member's base URL (``http://10.0.0.5:8080``); a path, a user, a query, a bad host or port 0 is
    refused."""
    parts = urlsplit(text.strip().rstrip("/"))
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or ""
    if (parts.scheme not in ("http", "https") or not port or not _HOST.fullmatch(host) or parts.path
            or parts.query or parts.fragment or parts.username or parts.password):
        raise UsageError(t("team.err_url", url=text), t("team.hint_url"))
    return f"{parts.scheme}://{host}:{port}"


def check_key(key: str, where: str) -> str:
    key = key.strip()
    if not _KEY.fullmatch(key):
        raise UsageError(t("team.err_key", where=where), t("team.hint_key"))
    return key


def check_name(name: str) -> str:
    """A member's name: it reaches nginx as it is (a response header, the access log), so ASCII only."""
    if not _NAME.fullmatch(name):
        raise UsageError(t("team.err_name", name=name), t("team.hint_name"))
    return name


def check_user_name(name: str) -> str:
    """A user's name, NFC-normalised: 1-64 letters or digits of any script (``张三``, ``José``) and ``. _ -``,
    starting with a letter or digit. No spaces, marks, symbols or format characters (bidirectional overrides
    would make a log lie about who asked)."""
    name = unicodedata.normalize("NFC", name.strip())

    def allowed(char: str, first: bool) -> bool:
        kind = unicodedata.category(char)
        return kind.startswith("L") or kind == "Nd" or (not first and char in _USER_PUNCTUATION)

    if not 1 <= len(name) <= 64 or not all(allowed(c, i == 0) for i, c in enumerate(name)):
        raise UsageError(t("team.err_user_name", name=name), t("team.hint_user_name"))
    return name


def nginx_name(name: str) -> str:
    """A user name as nginx's configuration and access log carry it: UTF-8 percent-encoded outside ``A-Z a-z 0-9
    . _ -`` (``张三`` → ``%E5%BC%A0%E4%B8%89``); ``%`` is never in a name, so it decodes back without doubt."""
    return quote(name, safe="")


def same_user(a: str, b: str) -> bool:
    """Names that differ only by case are one user (nginx's ``map`` matches its keys regardless of case)."""
    return a.casefold() == b.casefold()


def check_slots(slots: int) -> int:
    if not 1 <= slots <= MAX_SLOTS:
        raise UsageError(t("team.err_slots_range", slots=slots, most=MAX_SLOTS), t("team.hint_slots_range"))
    return slots


def check_host(host: str) -> str:
    if not _HOST.fullmatch(host):
        raise UsageError(t("team.err_host", host=host), t("team.hint_url"))
    return host


def check_model(name: str) -> str:
    """A model name as a member reported it: any printable text up to 256 characters (it reaches only JSON)."""
    if not name or len(name) > 256 or not name.isprintable():
        raise ValueError(f"not a model name: {name!r}")
    return name


def new_user_key() -> str:
    """A fresh user key: 32 random bytes, URL-safe base64 (``secrets.token_urlsafe``)."""
    return USER_KEY_PREFIX + secrets.token_urlsafe(32)


def _models(raw: list[dict[str, Any]]) -> tuple[ServedModel, ...]:
    return tuple(ServedModel(check_model(str(m["id"])), check_slots(int(m["slots"])) if m.get("slots") else 0,
                             tuple(check_model(str(a)) for a in m.get("aliases", ()))) for m in raw)


def _member(raw: dict[str, Any]) -> Member:
    listener = int(raw.get("listener", 0))
    if not 0 <= listener <= 65535:
        raise ValueError(f"listener port {listener}")
    return Member(check_name(raw["name"]), member_url(raw["url"]), check_key(raw["key"], raw["name"]),
                  check_slots(int(raw["slots"])), _models(raw.get("models", [])), listener)


def load(home: Home) -> Team:
    """The record, or an empty team when there is none yet; a damaged file is an error, never silently reset."""
    path = record_file(home)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Team()
    except (OSError, ValueError) as exc:
        raise UsageError(t("team.err_record", path=path, reason=exc), t("team.hint_record")) from None
    try:
        return Team(host=check_host(raw["host"]), port=int(raw["port"]),
                    members=[_member(m) for m in raw["members"]],
                    users={check_user_name(name): check_key(key, name) for name, key in raw["users"].items()},
                    nginx=str(raw.get("nginx", "")), default_model=str(raw.get("default_model", "")))
    except UsageError as exc:  # a value that could not reach nginx safely: the file was edited or damaged
        raise UsageError(t("team.err_record", path=path, reason=exc.message), t("team.hint_record")) from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise UsageError(t("team.err_record", path=path, reason=exc), t("team.hint_record")) from None


def save(home: Home, team: Team) -> None:
    """Write the record atomically, owner-only (it holds every key of the team)."""
    folder = home.team_dir
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(DIR_MODE)
    document = {"schema": SCHEMA, "host": team.host, "port": team.port,
                "members": [asdict(m) for m in team.members], "users": dict(team.users), "nginx": team.nginx,
                "default_model": team.default_model}
    write_atomic(record_file(home), (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode(),
                 mode=FILE_MODE)
