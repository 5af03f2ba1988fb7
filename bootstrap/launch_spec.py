"""What it takes to start this install's llama-server: the record the render, register and verify stages share.

The start scripts, the service definitions and the verify stage all start the same server; they read it from one
``LaunchSpec`` so a flag can never differ between them. Paths are absolute; the API key is referenced by its file
(``--api-key-file``), never by value, so no script or unit file ever holds the secret.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path

DEFAULT_HOST = "127.0.0.1"  # loopback only unless the user asks (then the API key is what protects the server)
# llama-server's default 8080 is about to become 9931 (PR #26508, reference/llama-server.md), so we always pass
# --port; 8080 is what OpenAI-compatible clients for llama.cpp expect by default.
DEFAULT_PORT = 8080
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::", ""})  # noqa: S104 - recognised, never chosen by default


@dataclass(frozen=True)
class LaunchSpec:
    """One llama-server start: binary, model, tuned flags, address and key file."""

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

    @property
    def connect_host(self) -> str:
        """Where a local client connects: a wildcard bind is reached through loopback."""
        if self.host in WILDCARD_HOSTS:
            return "::1" if self.host == "::" else DEFAULT_HOST
        return self.host

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` (IPv6 literals bracketed)."""
        host = self.connect_host
        try:
            if ipaddress.ip_address(host).version == 6:
                host = f"[{host}]"
        except ValueError:
            pass  # a host name
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The ``base_url`` an OpenAI SDK client takes."""
        return f"{self.base_url}/v1"

    def server_args(self) -> list[str]:
        """llama-server's arguments after the binary, in the order the start scripts write them."""
        out = ["-m", str(self.model)]
        if self.mmproj is not None:
            out += ["--mmproj", str(self.mmproj)]
        out += list(self.args)
        out += ["--alias", self.alias, "--host", self.host, "--port", str(self.port),
                "--api-key-file", str(self.api_key_file)]
        return out

    def argv(self) -> list[str]:
        """The whole command as a list (never a string: no shell, no quoting)."""
        return [str(self.server), *self.server_args()]
