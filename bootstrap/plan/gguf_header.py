"""GGUF header parser: metadata and tensor infos from a local file or a byte prefix, never the weights.

Remote files: ``gguf_remote.read_remote_header`` feeds this parser growing prefixes.

Why not ``gguf.GGUFReader``: it parses every key eagerly into numpy parts, so a 248k-token vocabulary costs ~30 s
and ~835 MiB (measured: docs/test-bed.md, "Reading GGUF headers"). This reader walks big arrays by their length
prefixes and keeps only their item type and count, and it bounds every count and length by the bytes the file (or
the fetched prefix) can hold, so a hostile header fails fast with one line and exit 2 instead of allocating or
hanging.

Format facts: llama.cpp ``ggml/include/gguf.h`` (layout) and ``ggml/src/gguf.cpp`` (``gguf_init_from_reader``: the
checks llama.cpp applies; this reader mirrors them so a header accepted here is one llama-server accepts),
``ggml/src/ggml.c`` ``type_traits`` and ``ggml/src/ggml-common.h`` (block and type sizes). All values little-endian.
"""

from __future__ import annotations

import mmap
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.fs_errors import os_reason

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)  # v1 used 32-bit counts and is rejected by llama.cpp; v2 and v3 share the layout
DEFAULT_ALIGNMENT = 32  # GGUF_DEFAULT_ALIGNMENT
MAX_DIMS = 4  # GGML_MAX_DIMS
MAX_NAME_BYTES = 63  # GGML_MAX_NAME 64 includes the terminating NUL
MAX_STRING_LENGTH = 1 << 30  # GGUF_MAX_STRING_LENGTH
MAX_ARRAY_ELEMENTS = 1 << 30  # GGUF_MAX_ARRAY_ELEMENTS
SMALL_ARRAY_MAX = 1024  # arrays up to this many items are materialized (per-layer values, rope sections…)
SKIPPED_PREFIX = "tokenizer.ggml."  # tokens, scores, token_type, merges…: never materialized, whatever their size
# A header-only test file (tests/support/header_only.py) sets this key to true: it carries real shapes but no weights,
# so the "tensor data inside the file" check is waived for it. llama-server still refuses such a file.
HEADER_ONLY_KEY = "qwenkit.header_only"

# gguf_type (gguf.h): value type id -> struct format of one item; 8 = string, 9 = array are handled apart.
_STRING, _ARRAY, _BOOL = 8, 9, 7
_SCALAR_FORMATS: dict[int, str] = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "b", 10: "Q", 11: "q",
                                   12: "d"}
_SCALAR_STRUCTS = {k: struct.Struct("<" + f) for k, f in _SCALAR_FORMATS.items()}
_TYPE_U32 = 4

# ggml_type id -> (name, elements per block, bytes per block). ggml.c type_traits + ggml-common.h static_asserts
# (QK_K = 256). Ids 4, 5, 31-33 and 36-38 were removed from ggml and have block size 0 there: rejected.
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36), 10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17), 40: ("NVFP4", 64, 36), 41: ("Q1_0", 128, 18), 42: ("Q2_0", 64, 18),
}
GGML_TYPE_IDS: dict[str, int] = {name: tid for tid, (name, _, _) in GGML_TYPES.items()}

_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U64 = struct.Struct("<Q")
_I64 = struct.Struct("<q")
_INT64_MAX = (1 << 63) - 1
# Smallest encodings, for bounding counts by the bytes left: a KV is key length + 1 key byte + type + 1 value byte;
# a tensor info is name length + n_dims + type + offset.
_MIN_KV_BYTES = 8 + 1 + 4 + 1
_MIN_TENSOR_BYTES = 8 + 4 + 4 + 8


class GGUFHeaderError(UsageError):
    """The file is not a GGUF header this product can trust (bad magic, hostile counts, truncation…): exit 2."""


class NeedMoreData(GGUFHeaderError):
    """The bytes given end before the header does; ``needed`` is the prefix length that gets further.

    Raised only when more of the file exists (or its size is unknown); the readers catch it and fetch more.
    """

    def __init__(self, needed: int, message: str) -> None:
        super().__init__(message)
        self.needed = needed


@dataclass(frozen=True)
class TensorInfo:
    """One tensor as the header describes it; ``shape`` is in ggml order (ne0 first)."""

    name: str
    shape: tuple[int, ...]
    ggml_type: int
    type_name: str
    offset: int  # absolute file offset of the tensor data
    nbytes: int


@dataclass(frozen=True)
class SkippedArray:
    """An array the reader walked over without materializing (tokenizer tokens, merges, scores…)."""

    item_type: int
    count: int


@dataclass(frozen=True)
class GGUFHeader:
    """Everything before the tensor data: what the planner needs to size a model before downloading it."""

    version: int
    metadata: Mapping[str, Any]
    tensors: tuple[TensorInfo, ...]
    alignment: int
    data_offset: int
    file_size: int | None
    source: str = field(default="", compare=False, repr=False)  # file or URL, for messages

    @property
    def architecture(self) -> str:
        arch = self.metadata.get("general.architecture")
        if not isinstance(arch, str) or not arch:
            raise GGUFHeaderError(t("gguf.no_architecture", source=self.source))
        return arch

    def arch_value(self, suffix: str, default: Any = None) -> Any:
        """``metadata[f"{arch}.{suffix}"]``, e.g. ``arch_value("block_count")``."""
        return self.metadata.get(f"{self.architecture}.{suffix}", default)

    def array_length(self, key: str) -> int | None:
        """Items in the array ``key`` (materialized or skipped); None when absent or not an array."""
        value = self.metadata.get(key)
        if isinstance(value, SkippedArray):
            return value.count
        if isinstance(value, tuple):
            return len(value)
        return None


# ------------------------------------------------------------------------------------------------------------
# parsing


def _pad(n: int, alignment: int) -> int:
    return n + (-n % alignment)


class _Parser:
    """One pass over ``buf`` (bytes, bytearray, memoryview or mmap) holding the first ``avail`` bytes of a file.

    ``file_size`` (when known) is the hard bound for every count and length; below it, running out of ``buf``
    raises NeedMoreData so the caller can fetch a longer prefix.
    """

    def __init__(self, buf: Any, avail: int, file_size: int | None, source: str) -> None:
        self.buf = buf
        self.avail = avail
        self.file_size = file_size
        self.source = source
        self.pos = 0
        self._where: tuple[str, dict[str, Any]] = ("gguf.where.header", {})  # what is being read, for messages

    # -- errors
    def at(self, message_key: str, **fields: Any) -> None:
        """Name the part being read (formatted only when an error needs it: this runs once per key/tensor)."""
        self._where = (message_key, fields)

    @property
    def where(self) -> str:
        return t(self._where[0], **self._where[1])

    def fail(self, key: str, **fields: Any) -> GGUFHeaderError:
        return GGUFHeaderError(t(key, source=self.source, **fields))

    def need(self, end: int) -> GGUFHeaderError:
        """The error for a read ending at ``end`` past the available bytes."""
        if self.file_size is not None and end > self.file_size:
            return self.fail("gguf.truncated", where=self.where, needed=end, size=self.file_size)
        return NeedMoreData(end, t("gguf.truncated", source=self.source, where=self.where, needed=end,
                                   size=self.avail))

    def bound(self, count: int, item_bytes: int, what: str) -> None:
        """Refuse ``count`` items of at least ``item_bytes`` each when the rest of the file cannot hold them."""
        if count < 0:
            raise self.fail("gguf.bad_count", what=what, count=count)
        if self.file_size is not None and count * item_bytes > self.file_size - self.pos:
            raise self.fail("gguf.count_too_large", what=what, count=count, size=self.file_size)

    # -- primitives
    def take(self, st: struct.Struct) -> Any:
        end = self.pos + st.size
        if end > self.avail:
            raise self.need(end)
        value = st.unpack_from(self.buf, self.pos)[0]
        self.pos = end
        return value

    def raw(self, n: int) -> Any:
        end = self.pos + n
        if end > self.avail:
            raise self.need(end)
        chunk = self.buf[self.pos:end]
        self.pos = end
        return chunk

    def string(self) -> str:
        at = self.pos
        n = self.take(_U64)
        if n > MAX_STRING_LENGTH:
            raise self.fail("gguf.string_too_long", where=self.where, length=n, offset=at)
        chunk = self.raw(n)
        try:
            return str(chunk, "utf-8")
        except UnicodeDecodeError:
            raise self.fail("gguf.bad_utf8", where=self.where, offset=at) from None

    def skip_strings(self, count: int) -> None:
        """Walk ``count`` strings by their length prefixes without decoding them (the hot loop for vocabularies)."""
        buf, pos, avail = self.buf, self.pos, self.avail
        unpack = _U64.unpack_from
        for _ in range(count):
            if pos + 8 > avail:
                self.pos = pos
                raise self.need(pos + 8)
            n = unpack(buf, pos)[0]
            if n > MAX_STRING_LENGTH:
                raise self.fail("gguf.string_too_long", where=self.where, length=n, offset=pos)
            pos += 8 + n
        if pos > avail:
            raise self.need(pos)
        self.pos = pos

    # -- values
    def value(self, key: str, vtype: int) -> Any:
        if vtype == _STRING:
            return self.string()
        st = _SCALAR_STRUCTS.get(vtype)
        if st is None:
            raise self.fail("gguf.bad_value_type", kv=key, type=vtype)
        v = self.take(st)
        return v != 0 if vtype == _BOOL else v

    def array(self, key: str) -> tuple[Any, ...] | SkippedArray:
        itype = self.take(_I32)
        count = self.take(_U64)
        if itype == _ARRAY or (itype != _STRING and itype not in _SCALAR_STRUCTS):
            raise self.fail("gguf.bad_value_type", kv=key, type=itype)
        if count > MAX_ARRAY_ELEMENTS:
            raise self.fail("gguf.array_too_long", where=self.where, count=count, limit=MAX_ARRAY_ELEMENTS)
        materialize = count <= SMALL_ARRAY_MAX and not key.startswith(SKIPPED_PREFIX)
        if itype == _STRING:
            self.bound(count, 8, self.where)
            if materialize:
                return tuple(self.string() for _ in range(count))
            self.skip_strings(count)
            return SkippedArray(itype, count)
        st = _SCALAR_STRUCTS[itype]
        self.bound(count, st.size, self.where)
        chunk = self.raw(count * st.size)
        if not materialize:
            return SkippedArray(itype, count)
        items = struct.unpack_from(f"<{count}{_SCALAR_FORMATS[itype]}", chunk)
        return tuple(v != 0 for v in items) if itype == _BOOL else items

    # -- sections
    def preamble(self) -> tuple[int, int, int]:
        magic = bytes(self.raw(4))
        if magic != GGUF_MAGIC:
            raise self.fail("gguf.bad_magic", magic=ascii(magic))
        version = self.take(_U32)
        if version & 0xFFFF == 0 and version != 0:  # gguf.cpp: a v3 file of the other byte order reads 0x03000000
            raise self.fail("gguf.big_endian", version=version)
        if version not in SUPPORTED_VERSIONS:
            raise self.fail("gguf.bad_version", version=version)
        n_tensors = self.take(_I64)
        n_kv = self.take(_I64)
        self.bound(n_kv, _MIN_KV_BYTES, t("gguf.what.kv"))
        self.bound(n_tensors, _MIN_TENSOR_BYTES, t("gguf.what.tensor"))
        return version, n_tensors, n_kv

    def metadata(self, n_kv: int) -> tuple[dict[str, Any], dict[str, int]]:
        meta: dict[str, Any] = {}
        types: dict[str, int] = {}
        for i in range(n_kv):
            self.at("gguf.where.key_index", index=i)
            key = self.string()
            if not key:
                raise self.fail("gguf.empty_key", index=i)
            if key in meta:
                raise self.fail("gguf.duplicate_key", kv=key)
            self.at("gguf.where.key", kv=key)
            vtype = self.take(_I32)
            types[key] = vtype
            meta[key] = self.array(key) if vtype == _ARRAY else self.value(key, vtype)
        return meta, types

    def tensor_infos(self, n_tensors: int) -> list[tuple[str, tuple[int, ...], int, int]]:
        infos: list[tuple[str, tuple[int, ...], int, int]] = []
        seen: set[str] = set()
        for i in range(n_tensors):
            self.at("gguf.where.tensor_index", index=i)
            name = self.string()
            if len(name.encode()) > MAX_NAME_BYTES:
                raise self.fail("gguf.name_too_long", name=name[:80], limit=MAX_NAME_BYTES)
            if name in seen:
                raise self.fail("gguf.duplicate_tensor", name=name)
            seen.add(name)
            self.at("gguf.where.tensor", name=name)
            n_dims = self.take(_U32)
            if n_dims > MAX_DIMS:
                raise self.fail("gguf.bad_ndims", name=name, n_dims=n_dims, limit=MAX_DIMS)
            shape = struct.unpack_from(f"<{n_dims}q", self.raw(8 * n_dims))
            n_elements = 1
            for ne in shape:
                if ne < 0:
                    raise self.fail("gguf.bad_shape", name=name, shape=list(shape))
                n_elements *= ne
            if n_elements > _INT64_MAX:
                raise self.fail("gguf.bad_shape", name=name, shape=list(shape))
            ggml_type = self.take(_I32)
            traits = GGML_TYPES.get(ggml_type)
            if traits is None:
                raise self.fail("gguf.bad_ggml_type", name=name, type=ggml_type)
            if (shape[0] if shape else 1) % traits[1]:
                raise self.fail("gguf.bad_block", name=name, ne0=shape[0], type_name=traits[0], block=traits[1])
            offset = self.take(_U64)
            infos.append((name, shape, ggml_type, offset))
        return infos


def _alignment(meta: Mapping[str, Any], types: Mapping[str, int], p: _Parser) -> int:
    """``general.alignment``: a u32 power of two (gguf.cpp), else the default 32."""
    if "general.alignment" not in meta:
        return DEFAULT_ALIGNMENT
    value = meta["general.alignment"]
    if types["general.alignment"] != _TYPE_U32 or value == 0 or value & (value - 1):
        raise p.fail("gguf.bad_alignment", value=value)
    return int(value)


def _layout(infos: list[tuple[str, tuple[int, ...], int, int]], data_offset: int, alignment: int,
            p: _Parser, check_eof: bool) -> tuple[TensorInfo, ...]:
    """Tensor records with absolute offsets; data must be packed in order and lie inside the file (gguf.cpp)."""
    tensors: list[TensorInfo] = []
    expected = 0
    for name, shape, ggml_type, rel in infos:
        type_name, block, type_size = GGML_TYPES[ggml_type]
        n_elements = 1
        for ne in shape:
            n_elements *= ne
        nbytes = n_elements // block * type_size
        if rel != expected:
            raise p.fail("gguf.bad_offset", name=name, offset=rel, expected=expected)
        end = data_offset + rel + nbytes
        if check_eof and p.file_size is not None and end > p.file_size:
            raise p.fail("gguf.data_past_eof", name=name, end=end, size=p.file_size)
        expected += _pad(nbytes, alignment)
        tensors.append(TensorInfo(name, tuple(shape), ggml_type, type_name, data_offset + rel, nbytes))
    return tuple(tensors)


def _parse(buf: Any, avail: int, file_size: int | None, source: str) -> GGUFHeader:
    p = _Parser(buf, avail, file_size, source)
    version, n_tensors, n_kv = p.preamble()
    meta, types = p.metadata(n_kv)
    p.at("gguf.where.header")
    alignment = _alignment(meta, types, p)
    infos = p.tensor_infos(n_tensors)
    data_offset = _pad(p.pos, alignment) if n_tensors else p.pos  # gguf.cpp pads only when tensors exist
    header_only = meta.get(HEADER_ONLY_KEY) is True
    if n_tensors and file_size is not None and data_offset > file_size and not header_only:
        p.at("gguf.where.data")
        raise p.need(data_offset)
    tensors = _layout(infos, data_offset, alignment, p, check_eof=not header_only)
    return GGUFHeader(version, MappingProxyType(meta), tensors, alignment, data_offset, file_size, source)


def parse_header(data: bytes | bytearray | memoryview, *, file_size: int | None = None,
                 source: str = "<bytes>") -> GGUFHeader:
    """Parse a header from the first bytes of a file.

    ``file_size`` bounds every count; when ``data`` holds the whole file pass ``len(data)``. A prefix that ends
    inside the header raises ``NeedMoreData(n)`` (a GGUFHeaderError) with the prefix length that gets further.
    """
    if file_size is not None and file_size < len(data):
        file_size = len(data)
    return _parse(data, len(data), file_size, source)


def read_header(path: Path) -> GGUFHeader:
    """The header of a local GGUF file, read through a memory map (only the header's pages are touched)."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            if size == 0:
                return _parse(b"", 0, 0, str(path))
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                return _parse(mm, size, size, str(path))
    except OSError as exc:
        raise GGUFHeaderError(t("gguf.cannot_read", source=str(path), error=os_reason(exc))) from None
