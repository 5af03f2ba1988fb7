"""Parsers for the llama-server log lines tests read (``docs/engine.md``, "Memory log lines").

llama-server prefixes each line with a timestamp and level (``0.00.017.383 I print_info: ...``); memory lines
need ``-lv 4``.
"""

from __future__ import annotations

import re

MIB = 1024 * 1024
_PFX = r"^(?:[\d.]+ [A-Z] )?"
_PRINT_INFO = re.compile(_PFX + r"print_info: (\w[\w ]*?)\s+= (.*)$", re.M)
KV_LINE = re.compile(
    _PFX + r"llama_kv_cache: size = +([\d.]+) MiB \( *(\d+) cells, +(\d+) layers, +(\d+)/(\d+) seqs\), "
    r"K \((\w+)\): +([\d.]+) MiB, V \((\w+)\): +([\d.]+) MiB", re.M)
RS_LINE = re.compile(
    _PFX + r"llama_memory_recurrent: size = +([\d.]+) MiB "
    r"\( *(\d+) cells, +(\d+) layers, +(\d+) seqs +(\d+) rs_seq\), "
    r"R \((\w+)\): +([\d.]+) MiB, S \((\w+)\): +([\d.]+) MiB", re.M)


def print_info(log: str) -> dict[str, str]:
    """``print_info: key = value`` lines of llama-server's model summary as a dict."""
    return {k: v.strip() for k, v in _PRINT_INFO.findall(log)}


def logged_as(printed: float, n_bytes: int) -> bool:
    """Whether a size llama.cpp printed with ``%.2f MiB`` is ``n_bytes``."""
    return abs(printed - n_bytes / MIB) <= 0.005 + 1e-9
