"""Safe extraction: hostile archives are refused with one line naming the member, and nothing lands outside.

Every hostile archive is built here with the real ``tarfile``/``zipfile`` writers (or patched bytes where a writer
refuses to lie), extracted into ``tmp/out``; the test then checks the whole ``tmp`` tree for strays.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from bootstrap.core.errors import ExitCode, IntegrityError
from bootstrap.place.archive import ArchiveLimits, extract_archive, member_parts
from tests.support.paths import REPO_ROOT

pytestmark = pytest.mark.usefixtures("english")


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz", format=tarfile.GNU_FORMAT) as tf:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tf.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _info(name: str, kind: bytes = tarfile.REGTYPE, *, link: str = "", mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, link, mode
    return info


def _zip(path: Path, entries: list[tuple[str, bytes, int]]) -> Path:
    """``entries``: (name, data, unix mode incl. file type bits; 0 = as Windows writes it)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.external_attr = mode << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return path


def _refused(tmp_path: Path, archive: Path, member: str, **kw: object) -> IntegrityError:
    """Extract into tmp/out, expect a refusal naming ``member``, and prove nothing appeared outside ``out``."""
    out = tmp_path / "out"
    out.mkdir()
    before = _tree(tmp_path) - {"out"}
    with pytest.raises(IntegrityError) as err:
        extract_archive(archive, out, **kw)  # type: ignore[arg-type]
    assert err.value.exit_code == ExitCode.INTEGRITY
    assert member in err.value.message and "\n" not in err.value.message
    after = {p for p in _tree(tmp_path) if p != "out" and not p.startswith("out" + os.sep)}
    assert after == before
    return err.value


# ---- hostile tarballs -------------------------------------------------------------------------------------
def test_tar_absolute_path_refused(tmp_path: Path) -> None:
    target = tmp_path / "victim" / "evil.txt"
    archive = _tar(tmp_path / "a.tar.gz", [(_info("top/ok"), b"ok"), (_info(str(target)), b"pwned")])
    _refused(tmp_path, archive, str(target))
    assert not target.exists()


def test_tar_dotdot_refused(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "a.tar.gz", [(_info("llama-b1/../../evil.txt"), b"pwned")])
    _refused(tmp_path, archive, "../../evil.txt")
    assert not (tmp_path / "evil.txt").exists()


def test_tar_symlink_escape_refused(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "a.tar.gz", [
        (_info("top/escape", tarfile.SYMTYPE, link="../../.."), None),
        (_info("top/escape/evil.txt"), b"pwned"),
    ])
    _refused(tmp_path, archive, "top/escape")


def test_tar_absolute_symlink_refused(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "a.tar.gz", [(_info("etc", tarfile.SYMTYPE, link="/etc"), None)])
    _refused(tmp_path, archive, "etc")


def test_tar_symlink_chain_escape_refused(tmp_path: Path) -> None:
    """Each link looks inside on its own; only following the chain shows ``l`` leaves the folder."""
    archive = _tar(tmp_path / "a.tar.gz", [
        (_info("sub", tarfile.DIRTYPE, mode=0o755), None),
        (_info("sub/inner", tarfile.SYMTYPE, link=".."), None),
        (_info("l", tarfile.SYMTYPE, link="sub/inner/../secret"), None),
    ])
    (tmp_path / "secret").write_text("outside")
    _refused(tmp_path, archive, "l")


def test_tar_write_through_symlink_refused(tmp_path: Path) -> None:
    """A link to an inside folder is fine, but no file is ever written through a link."""
    archive = _tar(tmp_path / "a.tar.gz", [
        (_info("real", tarfile.DIRTYPE, mode=0o755), None),
        (_info("alias", tarfile.SYMTYPE, link="real"), None),
        (_info("alias/file.txt"), b"via link"),
    ])
    _refused(tmp_path, archive, "alias/file.txt")


def test_tar_hardlink_escape_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not copy")
    archive = _tar(tmp_path / "a.tar.gz", [(_info("top/h", tarfile.LNKTYPE, link="../secret.txt"), None)])
    _refused(tmp_path, archive, "top/h")
    archive2 = _tar(tmp_path / "b.tar.gz", [(_info("h", tarfile.LNKTYPE, link=str(secret)), None)])
    (tmp_path / "out").rmdir()
    _refused(tmp_path, archive2, "h")


@pytest.mark.parametrize("kind", [tarfile.CHRTYPE, tarfile.BLKTYPE, tarfile.FIFOTYPE])
def test_tar_devices_and_fifos_refused(tmp_path: Path, kind: bytes) -> None:
    info = _info("top/dev", kind)
    info.devmajor, info.devminor = 1, 3
    archive = _tar(tmp_path / "a.tar.gz", [(_info("top/ok"), b"ok"), (info, None)])
    _refused(tmp_path, archive, "top/dev")


def test_tar_bomb_by_count_refused_before_writing(tmp_path: Path) -> None:
    members = [(_info(f"top/f{i:05d}"), b"") for i in range(10_001)]
    archive = _tar(tmp_path / "a.tar.gz", members)
    _refused(tmp_path, archive, "top/f10000")
    assert list((tmp_path / "out").iterdir()) == []  # counted while scanning: not one file written


def test_tar_bomb_by_declared_size_refused(tmp_path: Path) -> None:
    """A header declaring 5 GiB (the body never follows) is refused on the header, before reading any data."""
    info = _info("top/huge.bin")
    info.size = 5 << 30
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tf:
        tf.fileobj.write(info.tobuf(tarfile.GNU_FORMAT))  # header only: a writer would want the 5 GiB
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(raw.getvalue())
    err = _refused(tmp_path, archive, "top/huge.bin")
    assert "4096 MiB" in err.message


def test_tar_bytes_over_limit_refused(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "a.tar.gz", [(_info("top/a"), b"x" * 600), (_info("top/b"), b"y" * 600)])
    _refused(tmp_path, archive, "top/b", limits=ArchiveLimits(max_total_bytes=1000))


def test_damaged_gzip_refused(tmp_path: Path) -> None:
    good = _tar(tmp_path / "g.tar.gz", [(_info("top/a"), os.urandom(200_000))])
    bad = tmp_path / "a.tar.gz"
    data = good.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    _refused(tmp_path, bad, "a.tar.gz")


# ---- hostile zips -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["../evil.txt", "/abs/evil.txt", "C:/Windows/evil.txt", "C:evil.txt",
                                  "top\\..\\..\\evil.txt", "top/ok/../../../evil.txt"])
def test_zip_bad_names_refused(tmp_path: Path, name: str) -> None:
    archive = _zip(tmp_path / "a.zip", [("top/ok.txt", b"ok", 0o100644), (name, b"pwned", 0o100644)])
    _refused(tmp_path, archive, name)
    assert not (tmp_path / "evil.txt").exists()


def test_zip_symlink_escape_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "a.zip", [("link", b"../../outside", stat.S_IFLNK | 0o777)])
    _refused(tmp_path, archive, "link")


def test_zip_member_larger_than_declared_refused(tmp_path: Path) -> None:
    """A zip whose headers declare 50 bytes for a 4000-byte member (both headers patched)."""
    archive = _zip(tmp_path / "a.zip", [("top/big.bin", os.urandom(4000), 0o100644)])
    data = bytearray(archive.read_bytes())
    local = data.find(b"PK\x03\x04")
    central = data.find(b"PK\x01\x02")
    data[local + 22: local + 26] = (50).to_bytes(4, "little")  # uncompressed size, local header
    data[central + 24: central + 28] = (50).to_bytes(4, "little")  # uncompressed size, central directory
    archive.write_bytes(bytes(data))
    _refused(tmp_path, archive, "top/big.bin")


def test_zip_bomb_by_declared_total_refused(tmp_path: Path) -> None:
    archive = _zip(tmp_path / "a.zip", [("a", b"\0" * 70_000, 0o100644), ("b", b"\0" * 70_000, 0o100644)])
    _refused(tmp_path, archive, "b", limits=ArchiveLimits(max_total_bytes=100_000))
    assert list((tmp_path / "out").iterdir()) == []  # the central directory told us before writing


def test_member_parts() -> None:
    assert member_parts("llama-b1/./lib//x.so") == ("llama-b1", "lib", "x.so")
    assert member_parts("a\\b") == ("a", "b")
    for bad in ("/x", "../x", "a/../../x", "C:\\x", "d:x", "a/b:c", "x\0y"):
        assert member_parts(bad) is None, bad


# ---- what must work ---------------------------------------------------------------------------------------
def test_upstream_layout_extracts_with_links_and_exec_bits(tmp_path: Path) -> None:
    """Top folder stripped, relative ``.so`` links kept, exec bits kept, a hard link becomes a copy."""
    archive = _tar(tmp_path / "a.tar.gz", [
        (_info("llama-b10434", tarfile.DIRTYPE, mode=0o755), None),
        (_info("llama-b10434/llama-server", mode=0o755), b"#!/bin/sh\necho server\n"),
        (_info("llama-b10434/libllama.so.0.1.0", mode=0o644), b"ELF..."),
        (_info("llama-b10434/libllama.so.0", tarfile.SYMTYPE, link="libllama.so.0.1.0"), None),
        (_info("llama-b10434/libllama.so", tarfile.SYMTYPE, link="libllama.so.0"), None),
        (_info("llama-b10434/LICENSE-copy", tarfile.LNKTYPE, link="llama-b10434/libllama.so.0.1.0"), None),
    ])
    out = tmp_path / "out"
    out.mkdir()
    result = extract_archive(archive, out)
    assert sorted(p.name for p in out.iterdir()) == ["LICENSE-copy", "libllama.so", "libllama.so.0",
                                                     "libllama.so.0.1.0", "llama-server"]
    assert os.readlink(out / "libllama.so") == "libllama.so.0"
    assert (out / "libllama.so").read_bytes() == b"ELF..."
    assert (out / "LICENSE-copy").read_bytes() == b"ELF..." and not (out / "LICENSE-copy").is_symlink()
    assert stat.S_IMODE((out / "llama-server").stat().st_mode) == 0o755
    assert stat.S_IMODE((out / "libllama.so.0.1.0").stat().st_mode) == 0o644
    assert (result.files, result.links) == (3, 2)


def test_zip_second_archive_merges_into_same_folder(tmp_path: Path) -> None:
    """Windows CUDA: the cudart zip (flat, as upstream ships it) unpacks beside llama-server.exe."""
    main = _zip(tmp_path / "main.zip", [("llama-server.exe", b"MZ..", 0), ("ggml-cuda.dll", b"dll", 0)])
    cudart = _zip(tmp_path / "cudart.zip", [("cudart64_12.dll", b"rt", 0), ("cublas64_12.dll", b"blas", 0)])
    out = tmp_path / "out"
    out.mkdir()
    extract_archive(main, out)
    extract_archive(cudart, out)
    assert sorted(p.name for p in out.iterdir()) == ["cublas64_12.dll", "cudart64_12.dll", "ggml-cuda.dll",
                                                     "llama-server.exe"]


def test_real_testbed_asset_extracts_to_working_server(tmp_path: Path, engine_asset: Path) -> None:
    out = tmp_path / "我的 engine"
    out.mkdir()
    extract_archive(engine_asset, out)
    server = out / "llama-server"
    assert server.is_file() and os.access(server, os.X_OK)
    proc = subprocess.run([str(server), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 and proc.stderr.startswith("version:")
    with tarfile.open(engine_asset) as tf:  # every regular member of the asset arrived byte for byte
        for info in tf.getmembers():
            if info.isreg():
                fh = tf.extractfile(info)
                assert fh is not None
                assert (out / Path(info.name).name).read_bytes() == fh.read()


def _mount_prefix(mount_point: Path, options: str) -> list[str]:
    """Run a command with a fresh tmpfs at ``mount_point`` (a user + mount namespace: no root needed)."""
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False) \
        if shutil.which("unshare") else None
    if probe is None or probe.returncode != 0:
        pytest.skip("needs unshare -rm to mount a small tmpfs")
    mount_point.mkdir()
    return ["unshare", "-rm", "sh", "-c", f'mount -t tmpfs -o {options} tmpfs "$0" && shift && exec "$@"',
            str(mount_point), "--"]


_EXTRACT = """
import sys
from pathlib import Path
from bootstrap.place.archive import extract_archive
from bootstrap.core.errors import QwenKitError
dest = Path(sys.argv[2]) / "engine"
dest.mkdir()
try:
    extract_archive(Path(sys.argv[1]), dest)
except QwenKitError as exc:
    print(int(exc.exit_code), exc.message)
"""


@pytest.mark.parametrize(("options", "needle"), [
    # Fewer bytes free than the members declare: refused before the first byte is written.
    ("size=64k", r"not enough free disk space at .*/engine: 400000 bytes needed"),
    # Bytes enough, but the disk fills up meanwhile (here: it runs out of inodes, ENOSPC all the same).
    ("size=8m,nr_inodes=12", r"not enough free space at .*/engine: .* bytes\) more are needed"),
])
def test_a_full_disk_while_extracting_is_exit_3_naming_the_bytes(tmp_path: Path, options: str, needle: str) -> None:
    archive = _tar(tmp_path / "many.tar.gz", [(_info(f"top/lib{i}.so"), bytes(10_000)) for i in range(40)])
    mount = tmp_path / "disk"
    proc = subprocess.run([*_mount_prefix(mount, options), sys.executable, "-c", _EXTRACT, str(archive),
                           str(mount)], capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "QWENKIT_LANG": "en", "PYTHONPATH": str(REPO_ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    code, _, message = proc.stdout.strip().partition(" ")
    assert code == str(int(ExitCode.UNSUPPORTED)) and re.search(needle, message), proc.stdout
