"""Messages of model sources and the ``download`` command: resolving, probing, failover."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
}
