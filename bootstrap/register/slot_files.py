"""llama-server's slot files, read by the kit: which tokens a saved slot holds, and whether the file is whole.

The format (llama.cpp b11434): ``llama_context::state_seq_save_file`` (``src/llama-context.cpp``) writes three
little-endian u32 (magic ``ggsq`` = ``LLAMA_STATE_SEQ_MAGIC``, version ``LLAMA_STATE_SEQ_VERSION`` 4, a count) and
that many 32-bit "tokens", then the sequence's memory. The server (``tools/server/server-common.cpp``
``server_tokens::serialize``) packs its tokens into that array: a ``-1`` marker, a u32 version (1), a u32 count and
the token ids, then the media chunks. A file that does not parse this way, or ends inside it, is not restored
(the kit says so in the log); what follows the tokens is the engine's to check.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass
from pathlib import Path

MAGIC = 0x67677371  # 'ggsq'
VERSION = 4
PACKED_VERSION = 1
SUFFIX = ".slot"  # the kit's files: slot<id>.slot
MAX_TOKENS = 1 << 24  # more than any context a server is given


class BadSlotFile(ValueError):
    """The file is not a whole slot file of this format (the message says what is wrong)."""


@dataclass(frozen=True)
class SlotFile:
    path: Path
    slot: int
    tokens: tuple[int, ...]
    size: int
    mtime: float

    def age_s(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.mtime)


def file_name(slot: int) -> str:
    """The name a slot is saved under (``fs_validate_filename`` accepts it: plain ASCII, no separator)."""
    return f"slot{slot}{SUFFIX}"


def slot_of(path: Path) -> int | None:
    """The slot id a kit file name carries, or None for any other file."""
    stem = path.name.removesuffix(SUFFIX)
    if path.suffix != SUFFIX or not stem.startswith("slot") or not stem[4:].isdigit():
        return None
    return int(stem[4:])


def read_tokens(path: Path) -> tuple[int, ...]:
    """The tokens a slot file holds; ``BadSlotFile`` when its header is not this format or the file is cut short."""
    try:
        with path.open("rb") as f:
            head = f.read(12)
            size = path.stat().st_size
            if len(head) < 12:
                raise BadSlotFile(f"{size} bytes: shorter than its header")
            magic, version, count = struct.unpack("<III", head)
            if magic != MAGIC or version != VERSION:
                raise BadSlotFile(f"not a llama.cpp slot file of version {VERSION} "
                                  f"(magic {magic:#x}, version {version})")
            if count > MAX_TOKENS + 3 or 12 + 4 * count > size:
                raise BadSlotFile(f"{size} bytes: cut short (its header counts {count} tokens)")
            packed = struct.unpack(f"<{count}i", f.read(4 * count))
    except OSError as exc:
        raise BadSlotFile(str(exc)) from exc
    if packed and packed[0] == -1:
        if count < 3 or packed[1] != PACKED_VERSION or packed[2] > count - 3:
            raise BadSlotFile("its token list is not the server's format")
        tokens = packed[3:3 + packed[2]]
    else:
        tokens = packed
    if size == 12 + 4 * count:
        raise BadSlotFile("cut short: no memory state after its tokens")
    if any(t < 0 for t in tokens):
        raise BadSlotFile("its token list holds negative ids")
    return tuple(tokens)


def listed(folder: Path) -> tuple[list[SlotFile], list[tuple[Path, str]]]:
    """The kit's slot files in ``folder`` (by slot id), and the ones that do not read, each with why."""
    good: list[SlotFile] = []
    bad: list[tuple[Path, str]] = []
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return good, bad
    for path in entries:
        slot = slot_of(path)
        if slot is None or not path.is_file():
            continue
        try:
            tokens = read_tokens(path)
            st = path.stat()
        except (BadSlotFile, OSError) as exc:
            bad.append((path, str(exc)))
            continue
        good.append(SlotFile(path, slot, tokens, st.st_size, st.st_mtime))
    return good, bad
