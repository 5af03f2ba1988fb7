"""Which model architectures an installed llama.cpp build knows, read from the build itself.

llama.cpp names every architecture it can load in one table of C strings (``LLM_ARCH_NAMES``, llama.cpp
``src/llama-arch.cpp``) and refuses any other ``general.architecture`` at load time ("unknown model architecture",
``src/llama-model.cpp``). Those strings are in the library that holds the loader (``libllama.so`` / ``llama.dll`` /
``libllama.dylib``, or ``llama-server`` itself in a static build), so an upgrade can refuse a model its engine cannot
load before it stops the server that works, without starting the engine or reading a weight.

The search is for the name followed by its NUL terminator (linkers merge a string into the tail of a longer one, so
the leading byte is not checked). It can only err towards "known": a name found inside another string passes, and
the later stages still catch it. It answers only when the file is conclusive: several architectures every build has
had since GGUF began must be there too; otherwise ``None`` (cannot tell).
"""

from __future__ import annotations

import mmap
from pathlib import Path

# In LLM_ARCH_NAMES of every llama.cpp build since GGUF (2023); their absence means this is not the loader's file.
_ALWAYS_KNOWN = ("llama", "falcon", "gpt2", "starcoder", "bert")
_LOADER_PREFIXES = ("libllama", "llama.dll", "llama-server")


def _loader_files(engine_dir: Path) -> list[Path]:
    """The library with the loader first (shared builds), then the server binary (static builds)."""
    found = [p for p in sorted(engine_dir.iterdir()) if p.is_file() and not p.is_symlink()
             and p.name.startswith(_LOADER_PREFIXES)]
    return sorted(found, key=lambda p: not p.name.startswith(("libllama", "llama.dll")))


def _holds(data: mmap.mmap | bytes, name: str) -> bool:
    return data.find(name.encode("utf-8") + b"\0") >= 0


def knows_architecture(engine_dir: Path, arch: str) -> bool | None:
    """True when the build names ``arch``, False when its loader's table is there and ``arch`` is not in it, None
    when no file here is conclusive (unreadable, or not a llama.cpp build this reader understands)."""
    if not arch or "\0" in arch:
        return False
    try:
        files = _loader_files(engine_dir)
    except OSError:
        return None
    for path in files:
        try:
            with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                if not all(_holds(data, name) for name in _ALWAYS_KNOWN):
                    continue
                return _holds(data, arch)
        except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
            continue
    return None
