"""The team gateway's record (``<home>/team/team.json``): its members, its users and where it listens.

It holds secrets (each member's API key, each user's key), so it is written atomically with owner-only
permissions, like ``secrets/api-key``. Every value that reaches the nginx configuration is checked here against a
narrow alphabet, so the template never has to quote anything: a member is ``http(s)://host:port`` with a host name
or an IP address, a key is one token of URL-safe characters, a user name is a short word.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

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
# Keys travel in an HTTP header and, for nginx, inside a quoted string: letters, digits and "-._~+/=" only
# (a "$" would be read as an nginx variable, a quote or ";" would end the directive).
_KEY = re.compile(r"[A-Za-z0-9._~+/=-]{16,512}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")


@dataclass(frozen=True)
class Member:
    """One member install: where its llama-server listens, its key, how many requests it serves at once."""

    name: str
    url: str  # scheme://host:port, no path
    key: str
    slots: int

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

    def member(self, name_or_url: str) -> Member | None:
        wanted = name_or_url.rstrip("/")
        return next((m for m in self.members if wanted in (m.name, m.url)), None)


def record_file(home: Home) -> Path:
    return home.team_dir / "team.json"


def member_url(text: str) -> str:
    """``text`` as a member's base URL (``http://10.0.0.5:8080``); a path, a user, a query or a bad host is refused."""
    parts = urlsplit(text.strip().rstrip("/"))
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or ""
    if (parts.scheme not in ("http", "https") or port is None or not _HOST.fullmatch(host) or parts.path
            or parts.query or parts.fragment or parts.username or parts.password):
        raise UsageError(t("team.err_url", url=text), t("team.hint_url"))
    return f"{parts.scheme}://{host}:{port}"


def check_key(key: str, where: str) -> str:
    key = key.strip()
    if not _KEY.fullmatch(key):
        raise UsageError(t("team.err_key", where=where), t("team.hint_key"))
    return key


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise UsageError(t("team.err_name", name=name), t("team.hint_name"))
    return name


def check_host(host: str) -> str:
    if not _HOST.fullmatch(host):
        raise UsageError(t("team.err_host", host=host), t("team.hint_url"))
    return host


def new_user_key() -> str:
    """A fresh user key: 32 random bytes, URL-safe base64 (``secrets.token_urlsafe``)."""
    return USER_KEY_PREFIX + secrets.token_urlsafe(32)


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
                    members=[Member(check_name(m["name"]), member_url(m["url"]), check_key(m["key"], m["name"]),
                                    int(m["slots"])) for m in raw["members"]],
                    users={check_name(name): check_key(key, name) for name, key in raw["users"].items()},
                    nginx=str(raw.get("nginx", "")))
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
                "members": [asdict(m) for m in team.members], "users": dict(team.users), "nginx": team.nginx}
    write_atomic(record_file(home), (json.dumps(document, indent=2) + "\n").encode(), mode=FILE_MODE)
