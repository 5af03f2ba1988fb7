"""Fail when an ELF file needs a newer glibc than the floor the Linux setup promises (docs/releasing.md).

    python scripts/check_glibc.py --max 2.28 dist/QwenClientKit-Setup dist-onedir/QwenClientKit-Setup/

A dynamically linked ELF names every versioned symbol it needs from a library in its version-needs section
(``SHT_GNU_verneed``, usually ``.gnu.version_r``): one ``Elf_Verneed`` record per library, each with ``Elf_Vernaux``
entries whose names are ``GLIBC_2.17``, ``GLIBC_2.34``… The dynamic loader refuses to start a program when the
installed glibc lacks one of them, so the highest ``GLIBC_x.y`` named there is the oldest glibc the file runs on.
The records are parsed here with ``struct`` (layouts: the Linux Standard Base Core specification, "Symbol Versioning",
and glibc's ``elf/elf.h``), so the check needs neither binutils nor the target OS. Folders are walked and every ELF
inside is checked (a PyInstaller ``--onedir`` build holds the interpreter, ``libpython`` and each extension module).

Exit status: 0 all within the floor, 1 some file needs more (each listed), 2 bad usage or an unreadable file.
One JSON line on stdout with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
SHT_GNU_VERNEED = 0x6FFFFFFE  # elf.h
_GLIBC = re.compile(r"^GLIBC_(\d+)\.(\d+)(?:\.(\d+))?$")
MAX_RECORDS = 1 << 16  # a bound on the linked lists, so a corrupt file cannot loop forever


class NotElf(ValueError):
    """The file is not an ELF object (or is truncated where a header should be)."""


@dataclass(frozen=True)
class GlibcNeeds:
    path: Path
    versions: tuple[tuple[int, ...], ...]  # sorted, e.g. ((2, 2, 5), (2, 14), (2, 34))

    @property
    def highest(self) -> tuple[int, ...] | None:
        return self.versions[-1] if self.versions else None


def parse_version(text: str) -> tuple[int, ...]:
    """``"2.28"`` → ``(2, 28)``; ``ValueError`` for anything else."""
    parts = text.strip().split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise ValueError(f"not a glibc version: {text!r} (expected e.g. 2.28)")
    return tuple(int(p) for p in parts)


def shown(version: tuple[int, ...] | None) -> str:
    return "-" if version is None else ".".join(map(str, version))


def version_names(data: bytes) -> list[str]:
    """Every version name an ELF image requires (all libraries), in file order."""
    if data[:4] != ELF_MAGIC or len(data) < 0x34:
        raise NotElf("no ELF header")
    ei_class, ei_data = data[4], data[5]
    if ei_class not in (1, 2) or ei_data not in (1, 2):
        raise NotElf(f"unknown ELF class/encoding {ei_class}/{ei_data}")
    end = "<" if ei_data == 1 else ">"
    wide = ei_class == 2
    try:
        if wide:
            shoff, = struct.unpack_from(end + "Q", data, 0x28)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x3A)
        else:
            shoff, = struct.unpack_from(end + "I", data, 0x20)
            shentsize, shnum = struct.unpack_from(end + "HH", data, 0x2E)
        sections = [_section(data, end, wide, shoff + i * shentsize) for i in range(shnum)]
    except struct.error as exc:
        raise NotElf(f"truncated section headers: {exc}") from exc
    names: list[str] = []
    for sh_type, offset, size, link in sections:
        if sh_type != SHT_GNU_VERNEED or not 0 <= link < len(sections):
            continue
        _, str_off, str_size, _ = sections[link]
        strtab = data[str_off:str_off + str_size]
        names.extend(_verneed_names(data[offset:offset + size], strtab, end))
    return names


def _section(data: bytes, end: str, wide: bool, at: int) -> tuple[int, int, int, int]:
    """(sh_type, sh_offset, sh_size, sh_link) of the section header at ``at`` (Elf32_Shdr / Elf64_Shdr)."""
    if wide:
        _, sh_type, _, _, off, size, link = struct.unpack_from(end + "IIQQQQI", data, at)
    else:
        _, sh_type, _, _, off, size, link = struct.unpack_from(end + "IIIIIII", data, at)
    return sh_type, off, size, link


def _verneed_names(section: bytes, strtab: bytes, end: str) -> Iterator[str]:
    """Walk ``Elf_Verneed`` (vn_version, vn_cnt, vn_file, vn_aux, vn_next) and each one's ``Elf_Vernaux``
    (vna_hash, vna_flags, vna_other, vna_name, vna_next); 16 bytes each in both ELF classes."""
    at = 0
    for _ in range(MAX_RECORDS):
        _, count, _, aux, nxt = struct.unpack_from(end + "HHIII", section, at)
        entry = at + aux
        for _ in range(min(count, MAX_RECORDS)):
            _, _, _, name, aux_next = struct.unpack_from(end + "IHHII", section, entry)
            yield strtab[name:strtab.index(b"\0", name)].decode("ascii", "replace")
            if not aux_next:
                break
            entry += aux_next
        if not nxt:
            return
        at += nxt


def glibc_needs(path: Path) -> GlibcNeeds:
    """The ``GLIBC_x.y`` versions ``path`` requires."""
    found = set()
    for name in version_names(path.read_bytes()):
        m = _GLIBC.match(name)
        if m:
            found.add(tuple(int(g) for g in m.groups() if g is not None))
    return GlibcNeeds(path, tuple(sorted(found)))


def is_elf(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == ELF_MAGIC
    except OSError:
        return False


def elf_files(paths: list[Path]) -> Iterator[Path]:
    """The ELF files named, and those inside named folders (links not followed)."""
    for path in paths:
        if path.is_dir():
            for root, _, files in os.walk(path):
                for name in sorted(files):
                    candidate = Path(root, name)
                    if not candidate.is_symlink() and is_elf(candidate):
                        yield candidate
        else:
            yield path


def check(paths: list[Path], floor: tuple[int, ...]) -> tuple[list[GlibcNeeds], list[GlibcNeeds]]:
    """(every ELF checked, those needing more than ``floor``)."""
    checked = [glibc_needs(p) for p in elf_files(paths)]
    return checked, [n for n in checked if n.highest is not None and n.highest > floor]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", required=True, help="the newest glibc allowed, e.g. 2.28")
    parser.add_argument("--json", action="store_true", help="one JSON line on stdout")
    parser.add_argument("paths", nargs="+", type=Path, help="ELF files or folders holding them")
    opts = parser.parse_args(argv)
    try:
        floor = parse_version(opts.max)
        checked, over = check(opts.paths, floor)
    except (ValueError, OSError) as exc:  # NotElf is a ValueError
        print(f"check_glibc: {exc}", file=sys.stderr)
        return 2
    if not checked:
        print("check_glibc: no ELF file found in " + ", ".join(map(str, opts.paths)), file=sys.stderr)
        return 2
    worst = max((n.highest for n in checked if n.highest is not None), default=None)
    for needs in over:
        print(f"{needs.path}: needs GLIBC_{shown(needs.highest)} > {shown(floor)}", file=sys.stderr)
    if opts.json:
        print(json.dumps({"max_allowed": shown(floor), "files": len(checked), "highest": shown(worst),
                          "over": [{"path": str(n.path), "needs": shown(n.highest)} for n in over]}))
    else:
        print(f"{len(checked)} ELF file(s), highest GLIBC_{shown(worst)}, allowed up to {shown(floor)}: "
              + ("FAIL" if over else "ok"), file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
