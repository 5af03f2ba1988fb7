"""The GGUF header reader: agreement with gguf.GGUFReader on real files, remote prefix reads through the loopback
hub (with its faults), and hostile or truncated headers that must fail fast with exit 2 and one line."""

from __future__ import annotations

import http.server
import json
import struct
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from gguf import GGUFReader, GGUFValueType
from gguf.constants import GGML_QUANT_SIZES

from bootstrap.core import console
from bootstrap.core.errors import ExitCode, SourceError
from bootstrap.fetch.gguf_remote import read_remote_header
from bootstrap.plan.gguf_header import (
    GGML_TYPES,
    GGUFHeader,
    GGUFHeaderError,
    NeedMoreData,
    SkippedArray,
    parse_header,
    read_header,
)
from tests.support.header_only import (
    QWEN36_35B_A3B,
    RawGGUF,
    enc_str,
    enc_value,
    qwen36_27b_header,
    qwen36_35b_a3b_header,
    size_split,
    small_valid,
    tensor_list,
)
from tests.support.hub import LoopbackHub
from tests.support.hub_fixtures import REPO_ROOT

GIB = 2**30


@pytest.fixture(autouse=True)
def english() -> Iterator[None]:
    console.set_language("en")
    yield
    console.set_language(None)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


# ------------------------------------------------------------------------------------------------------------
# agreement with gguf.GGUFReader


def assert_agrees_with_gguf_reader(path: Path) -> GGUFHeader:
    """Every key (value, or type + count for skipped arrays) and every tensor as GGUFReader sees it."""
    ours = read_header(path)
    ref = GGUFReader(path)
    ref_fields = {k: f for k, f in ref.fields.items() if not k.startswith("GGUF.")}
    assert set(ours.metadata) == set(ref_fields)
    for key, f in ref_fields.items():
        value = ours.metadata[key]
        if f.types[0] == GGUFValueType.ARRAY:
            item_type, count = int(f.types[-1]), len(f.data)
            if isinstance(value, SkippedArray):
                assert (value.item_type, value.count) == (item_type, count), key
            else:
                assert isinstance(value, tuple) and list(value) == list(f.contents()), key
        else:
            assert value == f.contents(), key
    assert ours.version == ref.fields["GGUF.version"].contents()
    assert ours.alignment == ref.alignment
    assert ours.data_offset == ref.data_offset
    assert ours.file_size == path.stat().st_size
    assert len(ours.tensors) == len(ref.tensors)
    for mine, theirs in zip(ours.tensors, ref.tensors, strict=True):
        assert mine.name == theirs.name
        assert mine.shape == tuple(int(d) for d in theirs.shape)
        assert mine.ggml_type == int(theirs.tensor_type)
        assert mine.type_name == theirs.tensor_type.name
        assert mine.offset == theirs.data_offset
        assert mine.nbytes == theirs.n_bytes
    return ours


def test_agrees_with_gguf_reader_on_tiny_models(tiny_models: dict[str, Path]) -> None:
    for arch, path in tiny_models.items():
        header = assert_agrees_with_gguf_reader(path)
        assert header.architecture == arch
        assert header.arch_value("block_count") == header.metadata[f"{arch}.block_count"]
        assert header.array_length("tokenizer.ggml.tokens") == 512


def test_agrees_with_gguf_reader_on_a_model_with_an_mtp_head(make_tiny_model: Callable[..., Path]) -> None:
    """The nextn block's key and tensors (``blk.8.nextn.*`` after an 8-block trunk) read as gguf-py reads them."""
    header = assert_agrees_with_gguf_reader(make_tiny_model("qwen35moe", mtp_layers=1))
    assert header.arch_value("block_count") == 9 and header.arch_value("nextn_predict_layers") == 1
    nextn = {t.name: t.shape for t in header.tensors if ".nextn." in t.name}
    assert nextn == {"blk.8.nextn.eh_proj.weight": (128, 64), "blk.8.nextn.enorm.weight": (64,),
                     "blk.8.nextn.hnorm.weight": (64,), "blk.8.nextn.shared_head_norm.weight": (64,)}


def test_agrees_with_gguf_reader_on_every_value_type(tmp_path: Path) -> None:
    header = assert_agrees_with_gguf_reader(_write(tmp_path / "all.gguf", small_valid().build()))
    m = header.metadata
    assert (m["t.u8"], m["t.i8"], m["t.u16"], m["t.i16"]) == (200, -5, 60000, -300)
    assert (m["t.u32"], m["t.i32"], m["t.u64"], m["t.i64"]) == (4_000_000_000, -70000, 2**40, -(2**40))
    assert (m["t.f32"], m["t.f64"], m["t.bool"]) == (0.5, 0.25, True)
    assert m["t.arr_str"] == ("a", "bc", "") and m["t.arr_bool"] == (True, False)
    assert m["tokenizer.ggml.tokens"] == SkippedArray(8, 4)  # tokenizer arrays are never materialized
    assert header.array_length("t.arr_i32") == 3 and header.array_length("general.name") is None


def test_agrees_with_gguf_reader_on_gemma(gemma_gguf: Path) -> None:
    header = assert_agrees_with_gguf_reader(gemma_gguf)
    assert header.architecture == "gemma3"
    assert header.array_length("tokenizer.ggml.tokens") == 262_144
    assert sum(t.nbytes for t in header.tensors) <= header.file_size - header.data_offset


def test_type_table_matches_gguf_py() -> None:
    """Block and type sizes for every ggml type the installed gguf package knows (IQ*, TQ*, MXFP4, BF16…).

    Except Q8_1: PyPI gguf 0.19.0 still says 40 bytes (two f32 scales); ggml-common.h's static_assert says 36
    (two f16), as does gguf-py in llama.cpp b11434. Q8_1 is an activation type, never stored in model files.
    """
    assert GGML_TYPES[9] == ("Q8_1", 32, 36)
    for qtype, (block, size) in GGML_QUANT_SIZES.items():
        if qtype.name == "Q8_1":
            continue
        name, our_block, our_size = GGML_TYPES[int(qtype)]
        assert (name, our_block, our_size) == (qtype.name, block, size)


# ------------------------------------------------------------------------------------------------------------
# header-only Qwen3.6 files (tests/support/header_only.py)


def test_qwen36_35b_a3b_header(tmp_path: Path) -> None:
    header = read_header(qwen36_35b_a3b_header(tmp_path))
    assert header.architecture == "qwen35moe"
    n_layer = header.arch_value("block_count") - header.arch_value("nextn_predict_layers")
    assert n_layer == 40
    assert header.arch_value("expert_count") == 256 and header.arch_value("attention.head_count_kv") == 2
    assert header.array_length("tokenizer.ggml.tokens") == 248_320
    assert header.array_length("tokenizer.ggml.merges") == 247_000
    assert [t.name for t in header.tensors] == [name for name, *_ in tensor_list(QWEN36_35B_A3B)]
    assert header.file_size == header.data_offset  # no tensor data at all
    split = size_split(QWEN36_35B_A3B)
    published = {"experts": 18.3, "attention": 0.27, "deltanet": 1.01, "shared_expert": 0.12,
                  "token_embd": 0.50, "output": 0.50}  # docs/models.md, UD-Q4_K_XL headers
    for group, gib in published.items():
        assert split[group] / GIB == pytest.approx(gib, rel=0.05), group
    assert sum(t.nbytes for t in header.tensors) == sum(split.values())


def test_qwen36_27b_header(tmp_path: Path) -> None:
    header = read_header(qwen36_27b_header(tmp_path / "q27.gguf"))
    assert header.architecture == "qwen35"
    assert header.arch_value("block_count") - header.arch_value("nextn_predict_layers") == 64
    kv_layers = [il for il in range(64) if (il + 1) % header.arch_value("full_attention_interval") == 0]
    assert len(kv_layers) == 16
    assert {t.name for t in header.tensors if t.name.endswith("attn_k.weight")} == {
        f"blk.{il}.attn_k.weight" for il in kv_layers}
    assert sum(t.nbytes for t in header.tensors) / GIB == pytest.approx(15.65, rel=0.01)  # docs/models.md Q4_K_M


# ------------------------------------------------------------------------------------------------------------
# remote reads through the loopback hub


@pytest.fixture
def gemma_on_hub(hub: LoopbackHub, gemma_gguf: Path) -> str:
    hub.create_repo("google/gemma-3-270m", {"gemma.gguf": gemma_gguf})
    return hub.resolve_url("google/gemma-3-270m", "gemma.gguf")


def test_remote_header_equals_local_and_fetches_only_the_prefix(
    hub: LoopbackHub, gemma_on_hub: str, gemma_gguf: Path
) -> None:
    local = read_header(gemma_gguf)
    remote = read_remote_header(gemma_on_hub)
    assert remote == local
    hub.wait_idle()
    served = hub.bytes_served("gemma.gguf")
    assert local.data_offset <= served <= 2 * local.data_offset  # growing ranges: 1, 2, 4, 8 MiB
    assert served < local.file_size / 20
    assert all(r.status == 206 for r in hub.requests(origin="cdn", file_glob="gemma.gguf"))


def test_remote_header_of_a_header_only_file(hub: LoopbackHub, tmp_path: Path) -> None:
    """The planner's path: a Qwen-size header (10 MB, 248k vocabulary) read remotely through the CDN redirect."""
    path = qwen36_35b_a3b_header(tmp_path)
    hub.create_repo("unsloth/Qwen3.6-35B-A3B-GGUF", {path.name: path})
    remote = read_remote_header(hub.resolve_url("unsloth/Qwen3.6-35B-A3B-GGUF", path.name))
    assert remote == read_header(path)


def test_server_ignoring_range_is_read_without_the_body(
    hub: LoopbackHub, gemma_on_hub: str, gemma_gguf: Path
) -> None:
    # throttle only makes the hub write in counted chunks, so bytes_served reflects a body cut short
    hub.inject("ignore_range", path_glob="gemma.gguf", times=None)
    hub.inject("throttle", path_glob="gemma.gguf", times=None, rate=2**30)
    remote = read_remote_header(gemma_on_hub)
    assert remote == read_header(gemma_gguf)
    hub.wait_idle()
    cdn = hub.requests(origin="cdn", file_glob="gemma.gguf")
    assert [r.status for r in cdn] == [200]  # one streamed response, never re-requested
    assert hub.bytes_served("gemma.gguf") < remote.file_size / 4  # the connection was closed early


@pytest.mark.parametrize(
    ("kind", "params", "fragment"),
    [
        ("status", {"code": 503}, "HTTP 503"),
        ("range_200", {}, "asked for bytes 0-1048575"),
        ("wrong_offset", {"delta": 1000}, "asked for bytes"),
        ("short_length", {"missing": 10}, "the server sent"),
    ],
)
def test_http_faults_are_source_errors(
    hub: LoopbackHub, gemma_on_hub: str, kind: str, params: dict[str, Any], fragment: str
) -> None:
    hub.inject(kind, path_glob="gemma.gguf", **params)
    with pytest.raises(SourceError) as info:
        read_remote_header(gemma_on_hub)
    err = info.value
    assert err.exit_code == ExitCode.SOURCE
    assert fragment in err.message and gemma_on_hub in err.message
    assert "\n" not in err.message


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Origin A redirects to origin B (another host name); B serves ``server.body`` with Range. Both record headers."""

    def do_GET(self) -> None:
        srv: Any = self.server
        srv.seen.append(dict(self.headers))
        if srv.target:
            self.send_response(302)
            self.send_header("Location", srv.target)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body: bytes = srv.body
        first, last = (int(x) for x in self.headers["Range"].removeprefix("bytes=").split("-"))
        last = min(last, len(body) - 1)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {first}-{last}/{len(body)}")
        self.send_header("Content-Length", str(last - first + 1))
        self.end_headers()
        self.wfile.write(body[first:last + 1])

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def redirecting_pair() -> Iterator[tuple[Any, Any]]:
    servers = []
    for _ in range(2):
        srv: Any = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        srv.seen, srv.target, srv.body = [], None, small_valid().build()
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(srv)
    origin, cdn = servers
    origin.target = f"http://localhost:{cdn.server_address[1]}/blob?sig=1"
    yield origin, cdn
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def test_auth_headers_go_only_to_the_original_host(redirecting_pair: tuple[Any, Any]) -> None:
    origin, cdn = redirecting_pair
    url = f"http://127.0.0.1:{origin.server_address[1]}/org/repo/resolve/main/m.gguf"
    session = requests.Session()
    session.headers["Cookie"] = "session=1"  # the caller's session headers must not follow the redirect either
    header = read_remote_header(url, session=session, headers={"Authorization": "Bearer hf_x", "X-Token": "t"})
    assert header == parse_header(cdn.body, file_size=len(cdn.body), source=url)
    assert origin.seen and all(h.get("Authorization") == "Bearer hf_x" and h.get("X-Token") == "t"
                               and h.get("Cookie") == "session=1" for h in origin.seen)
    assert cdn.seen and not any({"Authorization", "X-Token", "Cookie"} & set(h) for h in cdn.seen)
    origin.seen.clear()
    cdn.seen.clear()
    session = requests.Session()
    session.auth = ("user", "secret")  # requests' session auth: sent to the origin, not to the CDN
    read_remote_header(url, session=session)
    assert origin.seen and all(h.get("Authorization", "").startswith("Basic ") for h in origin.seen)
    assert cdn.seen and not any("Authorization" in h for h in cdn.seen)


def test_redirect_loop_is_a_source_error(redirecting_pair: tuple[Any, Any]) -> None:
    origin, _ = redirecting_pair
    url = f"http://127.0.0.1:{origin.server_address[1]}/loop"
    origin.target = url
    with pytest.raises(SourceError, match="more than 10 redirects"):
        read_remote_header(url)
    assert len(origin.seen) == 11


def test_missing_remote_file_is_a_source_error(hub: LoopbackHub, gemma_on_hub: str) -> None:
    with pytest.raises(SourceError, match="HTTP 404"):
        read_remote_header(gemma_on_hub.replace("gemma.gguf", "missing.gguf"))


def test_remote_header_larger_than_the_cap(gemma_on_hub: str) -> None:
    with pytest.raises(GGUFHeaderError, match="needs more than 2097152 bytes") as info:
        read_remote_header(gemma_on_hub, max_header_bytes=2 * 2**20)
    assert info.value.exit_code == ExitCode.USAGE


# ------------------------------------------------------------------------------------------------------------
# hostile and truncated headers


def _kv_replaced(key: str, raw_value: bytes, raw_key: bytes | None = None) -> RawGGUF:
    raw = small_valid()
    raw.kvs = [((raw_key if raw_key is not None else k), raw_value) if k == key else (k, v) for k, v in raw.kvs]
    return raw


def _with(**changes: Any) -> RawGGUF:
    raw = small_valid()
    for name, value in changes.items():
        setattr(raw, name, value)
    return raw


def _tensor(index: int, name: str | bytes | None = None, ne: tuple[int, ...] | None = None,
            ggml_type: int | None = None, offset: int | None = -1, data: bytes | None = None) -> RawGGUF:
    raw = small_valid()
    raw.data = data
    n, e, ty, off = raw.tensors[index]
    raw.tensors[index] = (n if name is None else name, e if ne is None else ne, ty if ggml_type is None else ggml_type,
                          off if offset == -1 else offset)
    return raw


def _hostile() -> dict[str, tuple[bytes, str]]:
    """name -> (file bytes, a fragment of the expected message)."""
    u32 = struct.Struct("<I").pack
    base = small_valid()
    full = base.build()
    cases: dict[str, tuple[RawGGUF | bytes, str]] = {
        "bad_magic": (_with(magic=b"GGML"), "not a GGUF file"),
        "version_1": (_with(version=1), "GGUF version 1 is not supported (only versions 2 and 3"),
        "version_4": (_with(version=4), "GGUF version 4 is not supported"),
        "big_endian": (_with(version=0x03000000), "big-endian"),
        "tensor_count_2_60": (_with(n_tensors=2**60), "count 1152921504606846976 cannot fit"),
        "kv_count_2_62": (_with(n_kv=2**62), "cannot fit"),
        "negative_kv_count": (_with(n_kv=2**64 - 1), "negative"),
        "string_length_2_63": (_kv_replaced("general.name", u32(8) + struct.pack("<Q", 2**63) + b"x"),
                               "exceeds the 1 GiB limit"),
        "string_past_eof": (_kv_replaced("general.name", u32(8) + struct.pack("<Q", 2**20) + b"x"), "truncated"),
        "key_length_2_63": (bytes(full[:24]) + struct.pack("<Q", 2**63) + full[32:], "exceeds the 1 GiB limit"),
        "array_2_40_items": (_kv_replaced("t.arr_i32", struct.pack("<IIQ", 9, 5, 2**40)), "exceeds the limit"),
        "array_too_big_for_file": (_kv_replaced("t.arr_i32", struct.pack("<IIQ", 9, 10, 2**29)), "cannot fit"),
        "string_array_too_big": (_kv_replaced("tokenizer.ggml.tokens", struct.pack("<IIQ", 9, 8, 2**29)),
                                 "cannot fit"),
        "string_array_lengths_past_eof": (
            _kv_replaced("tokenizer.ggml.tokens", struct.pack("<IIQ", 9, 8, 2) + enc_str("a") +
                         struct.pack("<Q", 2**20)), "truncated"),
        "unknown_value_type": (_kv_replaced("t.u8", u32(13) + b"\0"), "unknown value type 13"),
        "nested_array": (_kv_replaced("t.arr_i32", struct.pack("<IIQ", 9, 9, 1)), "unknown value type 9"),
        "array_item_type_99": (_kv_replaced("t.arr_i32", struct.pack("<IIQ", 9, 99, 1)), "unknown value type 99"),
        "duplicate_key": (_kv_replaced("t.u16", enc_value(2, 1), raw_key=b"t.u8"), "appears twice"),
        "empty_key": (_kv_replaced("t.u16", enc_value(2, 1), raw_key=b""), "is empty"),
        "key_not_utf8": (_kv_replaced("t.u16", enc_value(2, 1), raw_key=b"t.\xff\xfe"), "not valid UTF-8"),
        "value_not_utf8": (_kv_replaced("general.name", u32(8) + enc_str(b"\xc3\x28")), "not valid UTF-8"),
        "alignment_3": (_with(kvs=[*base.kvs, ("general.alignment", enc_value(4, 3))]), "power of two, not 3"),
        "alignment_0": (_with(kvs=[*base.kvs, ("general.alignment", enc_value(4, 0))]), "power of two, not 0"),
        "alignment_u64": (_with(kvs=[*base.kvs, ("general.alignment", enc_value(10, 32))]), "must be a u32"),
        "n_dims_5": (_tensor(1, ne=(32, 1, 1, 1, 1)), "has 5 dimensions (at most 4)"),
        "ggml_type_removed": (_tensor(1, ggml_type=4), "unknown ggml type 4"),
        "ggml_type_99": (_tensor(1, ggml_type=99), "unknown ggml type 99"),
        "ggml_type_negative": (_tensor(1, ggml_type=2**32 - 1), "unknown ggml type -1"),
        "negative_dim": (_tensor(1, ne=(2**63,), data=b""), "invalid shape"),
        "elements_overflow": (_tensor(1, ne=(2**40, 2**40), data=b""), "invalid shape"),
        "row_not_whole_blocks": (_tensor(2, ne=(100, 2)), "not a multiple of the Q4_K block size 256"),
        "duplicate_tensor": (_tensor(1, name="token_embd.weight"), "appears twice"),
        "tensor_name_64_bytes": (_tensor(1, name="x" * 64), "longer than 63 bytes"),
        "tensor_name_not_utf8": (_tensor(1, name=b"\xff"), "not valid UTF-8"),
        "overlapping_tensors": (_tensor(1, offset=0), "starts at offset 0, expected 160"),
        "tensor_data_past_eof": (full[:-1], "past the end of the file"),
        "tensor_offset_past_eof": (_tensor(2, offset=2**62), "data starts at offset 4611686018427387904"),
        "empty_file": (b"", "truncated"),
    }
    return {k: ((v.build() if isinstance(v, RawGGUF) else v), frag) for k, (v, frag) in cases.items()}


HOSTILE = _hostile()


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_header_is_one_clear_usage_error(tmp_path: Path, case: str) -> None:
    data, fragment = HOSTILE[case]
    path = _write(tmp_path / f"{case}.gguf", data)
    with pytest.raises(GGUFHeaderError) as info:
        read_header(path)
    err = info.value
    assert not isinstance(err, NeedMoreData)
    assert err.exit_code == ExitCode.USAGE
    assert fragment in err.message and str(path) in err.message
    assert "\n" not in err.message


def test_every_truncation_of_a_small_file_fails_cleanly() -> None:
    data = small_valid().build()
    header = parse_header(data, file_size=len(data))
    end_of_tensor_data = header.tensors[-1].offset + header.tensors[-1].nbytes
    assert end_of_tensor_data == len(data)
    for n in range(len(data)):
        with pytest.raises(GGUFHeaderError) as info:
            parse_header(data[:n], file_size=n, source="prefix")
        assert not isinstance(info.value, NeedMoreData), n
        assert info.value.exit_code == ExitCode.USAGE and "\n" not in info.value.message


def test_a_prefix_asks_for_more_until_the_header_parses() -> None:
    """Without the whole file, the parser says how long a prefix it needs (what the remote reader fetches)."""
    data = small_valid().build()
    full = parse_header(data, file_size=len(data))
    for n in range(full.data_offset + 1):
        try:
            assert parse_header(data[:n], file_size=len(data)) == full
            assert n > full.data_offset - full.alignment  # only the padding after the tensor infos is optional
        except NeedMoreData as more:
            assert n < more.needed <= full.data_offset


def test_read_header_of_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(GGUFHeaderError, match="cannot read the file") as info:
        read_header(tmp_path / "nope.gguf")
    assert info.value.exit_code == ExitCode.USAGE


def test_hostile_headers_stay_within_a_small_address_space() -> None:
    """In a child capped at 512 MiB of address space, every hostile case (and huge counts in a 16-byte prefix
    with a claimed 2^62-byte file) still ends in GGUFHeaderError/NeedMoreData, never MemoryError or a hang."""
    code = textwrap.dedent(
        """
        import json, resource, struct, sys
        from bootstrap.plan.gguf_header import GGUFHeaderError, NeedMoreData, parse_header
        from tests.plan.test_gguf_header import HOSTILE
        resource.setrlimit(resource.RLIMIT_AS, (512 * 2**20, 512 * 2**20))  # after imports: numpy maps a lot
        results = {}
        for name, (data, _) in HOSTILE.items():
            try:
                parse_header(data, file_size=len(data))
                results[name] = "parsed"
            except GGUFHeaderError as exc:
                results[name] = type(exc).__name__
        # counts bounded only by a claimed huge size: the parser must ask for more bytes, not allocate
        for name, prefix in {
            "tensors": b"GGUF" + struct.pack("<IQQ", 3, 2**56, 0),
            "kvs": b"GGUF" + struct.pack("<IQQ", 3, 0, 2**56),
            "array": b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k"
                     + struct.pack("<IIQ", 9, 8, 2**29),
        }.items():
            try:
                parse_header(prefix, file_size=2**62)
                results[name] = "parsed"
            except NeedMoreData as exc:
                results[name] = "NeedMoreData" if exc.needed <= len(prefix) + 8 else "asked too much"
            except GGUFHeaderError as exc:
                results[name] = type(exc).__name__
        print(json.dumps(results))
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.splitlines()[-1])
    assert set(results) == {*HOSTILE, "tensors", "kvs", "array"}
    assert {results[k] for k in HOSTILE} == {"GGUFHeaderError"}
    assert [results[k] for k in ("tensors", "kvs", "array")] == ["NeedMoreData"] * 3
