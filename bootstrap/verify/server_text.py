"""What llama-server said, as one line for a report or an error: its ``{"error": {"message": …}}`` or the start of
the body, whitespace folded, cut at a limit. Shared by the chat checks and the tool-call proof."""

from __future__ import annotations

import json

import requests


def one_line(text: str, limit: int = 300) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def server_message(resp: requests.Response, limit: int = 300) -> str:
    """llama-server's ``{"error": {"message": …}}`` as one line, else the start of the body."""
    try:
        doc = resp.json()
    except ValueError:
        return one_line(resp.text[:limit], limit)
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        return one_line(str(doc["error"].get("message", "")), limit)
    return one_line(json.dumps(doc)[:limit], limit)
