"""Messages of sources and the download engine: progress, retries, integrity and disk errors."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
}
