"""Messages of the GGUF header reader: truncated, hostile or unsupported headers."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
}
