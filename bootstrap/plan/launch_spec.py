"""What it takes to start this install's llama-server: the record the render, register and verify stages share.

The start scripts, the service definitions and the verify stage all start the same server; they read it from one
``LaunchSpec`` so a flag can never differ between them. Paths are absolute; the API key is referenced by its file
(``--api-key-file``), never by value, so no script or unit file ever holds the secret.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath

from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.home import PRESET_NAME, SYSTEM_PROMPTS_NAME
from bootstrap.core.input_checks import check_text, decimal_int
from bootstrap.plan import prompt_cache
from bootstrap.plan.keep_alive import sleep_seconds

DEFAULT_HOST = "127.0.0.1"  # loopback only unless the user asks (then the API key is what protects the server)
# llama-server's default 8080 is about to become 9931 (llama.cpp PR #26508; docs/engine.md), so we always pass
# --port; 8080 is what OpenAI-compatible clients for llama.cpp expect by default.
DEFAULT_PORT = 8080
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - recognised, never chosen by default
# A host name: dot-separated labels of letters, digits and inner hyphens, 1-63 characters each, 253 in all, the
# last one not all digits (RFC 1123 §2.1; RFC 1035 §2.3.4 for the lengths).
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
MAX_HOST_NAME = 253


def parse_host(text: str) -> str:
    """``--host`` as llama-server will bind it: an IP address (an IPv6 one with or without brackets) or a host
    name; anything else (``127.0.0.1; touch x``, ``bad host``) is ``UsageError`` (exit 2) before any download."""
    check_text("--host", text, MAX_HOST_NAME + 2)
    value = text.strip()
    if value.startswith("[") and value.endswith("]"):
        value = value[1:-1]
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        pass
    labels = value.rstrip(".").split(".")
    if (0 < len(value) <= MAX_HOST_NAME and all(_LABEL.fullmatch(label) for label in labels)
            and not labels[-1].isdigit()):
        return value
    raise UsageError(t("input.bad_host", host=text), t("input.hint_host"))


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach a server bound to ``host`` (127.0.0.0/8, ::1, ``localhost``)."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        name = host.lower().rstrip(".")
        return name == "localhost" or name.endswith(".localhost")  # RFC 6761 §6.3


# Documentation ranges (RFC 5737, RFC 3849): a UDP "connect" to them only asks the routing table, nothing is sent.
_ROUTE_PROBE = {False: "192.0.2.1", True: "2001:db8::1"}


def routed_address(ipv6: bool = False) -> str | None:
    """The source address this machine's routing table picks for the outside world (the default route's
    interface), or ``None`` without a route. A datagram socket's ``connect`` sends nothing."""
    import socket

    family = socket.AF_INET6 if ipv6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.connect((_ROUTE_PROBE[ipv6], 9))
            ip = ipaddress.ip_address(sock.getsockname()[0].split("%")[0])
    except (OSError, ValueError):
        return None
    return None if _unreachable(ip) else str(ip)


def _unreachable(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    return ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast


def lan_address(ipv6: bool = False) -> str | None:
    """An address of this machine that other machines can reach, or ``None`` without one: IPv4 for an IPv4
    wildcard bind, IPv6 then IPv4 for ``::`` (a dual-stack socket takes both).

    The default route's interface first: the first interface listed may be a container or VM bridge (docker0,
    virbr0, vEthernet) that no other machine reaches. Without a default route (an isolated intranet segment), the
    first non-loopback, non-link-local address of an interface that is up (``psutil``)."""
    import socket

    import psutil

    for want_v6 in (True, False) if ipv6 else (False,):
        routed = routed_address(want_v6)
        if routed is not None:
            return routed
    families = (socket.AF_INET6, socket.AF_INET) if ipv6 else (socket.AF_INET,)
    stats = psutil.net_if_stats()
    found: dict[int, str] = {}
    for name, addresses in psutil.net_if_addrs().items():
        if name in stats and not stats[name].isup:
            continue
        for address in addresses:
            if address.family not in families or address.family in found:
                continue
            try:
                ip = ipaddress.ip_address(address.address.split("%")[0])
            except ValueError:
                continue
            if not _unreachable(ip):
                found[address.family] = str(ip)
    return next((found[f] for f in families if f in found), None)


def connect_host(host: str) -> str:
    """Where a local client connects to a server bound to ``host``: a wildcard bind is reached through loopback."""
    if host in WILDCARD_HOSTS:
        return "::1" if host == "::" else DEFAULT_HOST
    return host


def url_host(host: str) -> str:
    """``host`` as it goes into a URL (IPv6 literals bracketed, RFC 3986 §3.2.2)."""
    try:
        return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host  # a host name


def thinking_of(args: Sequence[str]) -> bool | None:
    """Whether llama-server thinks by default with these flags: ``--reasoning on|off`` (llama.cpp
    ``common/arg.cpp``: it sets the template's ``enable_thinking``); None when absent (an engine build without the
    flag: the chat template decides, and Qwen3.6's thinks)."""
    flags = list(args)
    if "--reasoning" in flags[:-1]:
        return flags[flags.index("--reasoning") + 1] in ("on", "true", "1", "enabled")
    return None


def _last_number(args: Sequence[str], names: tuple[str, ...]) -> int | None:
    """The value of the last of these flags given with a decimal number (llama.cpp ``common/arg.cpp`` reads the
    arguments in order, so the last one wins), or None."""
    flags, found = list(args), None
    for i, flag in enumerate(flags[:-1]):
        value = decimal_int(flags[i + 1]) if flag in names else None
        if value is not None:
            found = value
    return found


def ctx_of(args: Sequence[str]) -> int | None:
    """The context size these flags give llama-server (``-c`` / ``--ctx-size``), or None when they set none."""
    return _last_number(args, ("-c", "--ctx-size"))


def parallel_of(args: Sequence[str]) -> int | None:
    """The slot count these flags give llama-server (``-np`` / ``--parallel``), or None when they set none or a
    value that is not a decimal number (``-1``, auto: the engine's own choice)."""
    return _last_number(args, ("-np", "--parallel"))


def request_ctx_of(args: Sequence[str]) -> int | None:
    """Tokens one request may use with these flags: the whole context when the slots share one KV pool
    (``-kvu``, or no ``-np``: llama-server's automatic 4 slots share one, ``tools/server/server.cpp``) or there is
    one slot, else the context split between the ``-np`` slots (llama-server's ``n_ctx_slot``); None when the
    flags set no context."""
    ctx = ctx_of(args)
    slots = parallel_of(args) or 1
    if ctx is None or slots <= 1 or "-kvu" in args or "--kv-unified" in args:
        return ctx
    return ctx // slots


@dataclass(frozen=True)
class PresetModel:
    """Another installed model the server offers beside the default one (llama-server's router mode): its name
    (what requests send as ``"model"``), files and tuned flags (the same kind as ``LaunchSpec.args``)."""

    name: str
    model: Path
    mmproj: Path | None
    args: tuple[str, ...]
    load_on_startup: bool = False
    chat_template: Path | None = None  # the kit's template instead of the model's own (plan/chat_template.py)
    keep_alive_s: int = -1  # idle seconds before the engine frees it (plan/keep_alive.py); -1: kept loaded
    model_sha256: str = ""  # the model file's, for its prompt cache's key ("": none kept on disk)


# The environment variable llama-server reads for ``--api-key-file`` (llama.cpp ``common/arg.cpp``). In router mode
# the router drops the key from the arguments it gives each model's child server (``unset_reserved_args`` in
# ``tools/server/server-models.cpp``) but hands children its own environment: set there, every child on its
# 127.0.0.1 port also wants the key (docs/several-models.md).
CHILD_KEY_ENV = "LLAMA_ARG_API_KEY_FILE"
FROZEN_RESET_ENV = "PYINSTALLER_RESET_ENVIRONMENT"


@dataclass(frozen=True)
class LaunchSpec:
    """One llama-server start: binary, model, tuned flags, address and key file; with ``others``, a router that
    offers this model (as ``alias``, the default) and those, each in a child server of its own."""

    home: Path
    system: str  # platform.system() of the target: "Linux", "Darwin" or "Windows"
    engine_dir: Path
    server: Path  # llama-server (``.exe`` on Windows) inside engine_dir
    model: Path
    mmproj: Path | None
    args: tuple[str, ...]  # tuned plan flags, without -m/--mmproj/--alias/--host/--port/--api-key-file
    alias: str  # the model name clients see in /v1/models and send as "model"
    api_key_file: Path
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    others: tuple[PresetModel, ...] = ()  # several models: llama-server's router mode (render/model_preset.py)
    models_max: int = 1  # router mode: models loaded at once (never 0: see install/library.models_max_for)
    kit: tuple[str, ...] = ()  # router mode: the words that run this kit, for its front (register/router_front.py)
    # The chat template the kit derived from the model's own for agent clients (plan/chat_template.py), in the home;
    # None: the model's own template serves.
    chat_template: Path | None = None
    # Idle seconds before the engine frees the default model's memory (plan/keep_alive.py; ``--sleep-idle-seconds``);
    # -1: kept loaded. In router mode each model's own is in its preset section.
    keep_alive_s: int = -1
    # Model name → its system prompt (plan/presets.py): the kit's front adds it to a chat request that has none,
    # read from ``system_prompts_file`` (JSON: any character survives); with any, the front runs for one model too.
    system_prompts: tuple[tuple[str, str], ...] = ()
    model_sha256: str = ""  # the model file's, for the prompt cache's key ("" : no prompt cache on disk)

    @property
    def system_prompts_file(self) -> Path:
        """The system prompts the front reads, beside the start scripts."""
        return self.home / SYSTEM_PROMPTS_NAME

    @property
    def router(self) -> bool:
        """Several models behind this endpoint: llama-server runs as a router over a preset file."""
        return bool(self.others)

    @property
    def preset_file(self) -> Path:
        """The router's preset (INI) file, beside the start scripts."""
        return self.home / PRESET_NAME

    def child_env(self) -> dict[str, str]:
        """Variables the start scripts set for the server: in router mode the key file, which the router passes on
        to every child server through the environment (see ``CHILD_KEY_ENV``); before the kit's front, a frozen
        kit's own reset (a one-file PyInstaller program started under another, the supervisor, would otherwise take
        itself for that one's worker: PyInstaller 6.10+ ``PYINSTALLER_RESET_ENVIRONMENT``)."""
        if not self.router and not self.fronted:
            return {}
        # before one model's server, the front reads the key from there too (register/router_front.py)
        return {CHILD_KEY_ENV: self.key_file_arg(), **({FROZEN_RESET_ENV: "1"} if self.fronted else {})}

    @property
    def connect_host(self) -> str:
        """Where a local client connects: a wildcard bind is reached through loopback."""
        return connect_host(self.host)

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` where this machine reaches the server (the installer's own checks)."""
        return f"http://{url_host(self.connect_host)}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The ``base_url`` an OpenAI SDK client on this machine takes."""
        return f"{self.base_url}/v1"

    @property
    def exposed(self) -> bool:
        """Whether other machines can reach the server (a host other than loopback)."""
        return not is_loopback(self.host)

    @property
    def client_base_url(self) -> str:
        """Where clients should connect: this machine's LAN address for a wildcard bind (``0.0.0.0``, ``::``),
        else the bound host. Reports, ``status`` and the snippets show this one."""
        host = self.connect_host
        if self.host in WILDCARD_HOSTS:
            host = lan_address(ipv6=self.host == "::") or host
        return f"http://{url_host(host)}:{self.port}"

    @property
    def client_openai_url(self) -> str:
        """The OpenAI ``base_url`` clients should use (``client_base_url`` + ``/v1``)."""
        return f"{self.client_base_url}/v1"

    @property
    def thinking(self) -> bool | None:
        """Whether the server thinks by default (``thinking_of`` its flags)."""
        return thinking_of(self.args)

    @property
    def fronted(self) -> bool:
        """The kit's front on the install's address (``register/router_front.py``): in router mode requests that
        name no model go to the default one and the model list shows no command lines; with a system prompt (one
        model too) a chat request without one gets it."""
        return bool(self.kit) and (self.router or bool(self.system_prompts))

    def server_args(self) -> list[str]:
        """llama-server's arguments after the binary, in the order the start scripts write them. In router mode
        only the router's own: each model's flags are in the preset file (command-line flags would reach every
        child and override its preset, llama.cpp tools/server/README.md "Model presets"); behind the front, no
        address (the front gives it its own on 127.0.0.1)."""
        if self.router:
            address = [] if self.fronted else ["--host", self.host, "--port", str(self.port)]
            return ["--models-preset", self.preset_arg(), "--models-max", str(self.models_max), "--metrics",
                    *address, "--api-key-file", self.key_file_arg()]
        out = ["-m", str(self.model)]
        if self.mmproj is not None:
            out += ["--mmproj", str(self.mmproj)]
        out += list(self.args)
        if self.chat_template is not None:
            out += ["--chat-template-file", self.home_file_arg(self.chat_template)]
        if self.prompt_cache_dir is not None:
            out += ["--slot-save-path", self.home_file_arg(self.prompt_cache_dir)]
        # /metrics (behind the key) is what the supervisor's stall probe reads: the one task that does not start the
        # keep-alive's idle time again (register/supervisor.py); in router mode the router's flag reaches each child
        out += ["--metrics"]
        sleep = sleep_seconds(self.keep_alive_s)
        if sleep is not None:
            out += ["--sleep-idle-seconds", str(sleep)]
        address = [] if self.fronted else ["--host", self.host, "--port", str(self.port)]
        out += ["--alias", self.alias, *address, "--api-key-file", self.key_file_arg()]
        return out

    @property
    def prompt_cache_dir(self) -> Path | None:
        """Where this server's slots are saved across restarts (``plan/prompt_cache.py``): a folder keyed by the
        model file's SHA-256, the engine build and the chat template. None in router mode (each model is a child
        of its own; not kept) or without the model's hash."""
        if self.router or not self.model_sha256:
            return None
        return prompt_cache.cache_dir(self.home, self.model_sha256, self.engine_dir.name, self.chat_template)

    def model_cache_dirs(self) -> dict[str, Path]:
        """Router mode: each model's own slot-save folder (its preset section's ``slot-save-path``), keyed like
        ``prompt_cache_dir`` by that model's hash, the engine build and its template; {} for one model's server."""
        if not self.router:
            return {}
        entries = [(self.alias, self.model_sha256, self.chat_template),
                   *((m.name, m.model_sha256, m.chat_template) for m in self.others)]
        return {name: prompt_cache.cache_dir(self.home, sha, self.engine_dir.name, template)
                for name, sha, template in entries if sha}

    def cache_dirs(self) -> list[Path]:
        """Every slot-save folder this start uses (made before the server starts: llama-server refuses a
        ``--slot-save-path`` that is not a directory)."""
        return [self.prompt_cache_dir] if self.prompt_cache_dir is not None else list(self.model_cache_dirs().values())

    def home_file_arg(self, path: Path) -> str:
        """A file llama-server opens with ``std::ifstream`` on its UTF-8 argument (``--api-key-file``,
        ``--chat-template-file``: ``read_file`` in llama.cpp ``common/arg.cpp``). On Windows that reads the path in
        the ANSI code page, so a home under a user name such as 张三 fails with "failed to open file": there the
        value is relative to the home (every Windows launcher starts the server there: run_qwen.bat, WinSW's
        ``workingdirectory``), and the path inside the home is ASCII. ``-m`` and ``--mmproj`` are opened with
        UTF-8-aware calls (``ggml_fopen``, mtmd's ``open_ifstream_binary``)."""
        if self.system == "Windows":
            try:
                return str(PureWindowsPath(path).relative_to(PureWindowsPath(self.home)))
            except ValueError:
                pass
        return str(path)

    def key_file_arg(self) -> str:
        """``--api-key-file``'s value (``home_file_arg``)."""
        return self.home_file_arg(self.api_key_file)

    def preset_arg(self) -> str:
        """``--models-preset``'s value: relative to the home on Windows (as ``key_file_arg``), else absolute."""
        if self.system == "Windows":
            return PRESET_NAME
        return str(self.preset_file)

    def front_args(self) -> list[str]:
        """The front's words before the router's command (``qwenkit front``): its address and the default."""
        prompts = ["--system-prompts", str(self.system_prompts_file)] if self.system_prompts else []
        return ["front", "--host", self.host, "--port", str(self.port), "--model", self.alias, *prompts, "--"]

    def argv(self) -> list[str]:
        """The whole command as a list (never a string: no shell, no quoting): llama-server, or in router mode
        the kit's front, which starts the router itself (``front_args``)."""
        if self.fronted:
            return [*self.kit, *self.front_args(), str(self.server), *self.server_args()]
        return [str(self.server), *self.server_args()]
