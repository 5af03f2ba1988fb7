"""Folders a command sees differently: a fresh tmpfs, or a folder made read-only, in a mount namespace of its own
(util-linux ``unshare -rm``: a user namespace in which the test is root, so no real root is needed and nothing
outside the command's process tree changes). Once the command ends, the folder is as it was."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def can_mount() -> bool:
    """Whether ``unshare -rm`` gives this test a mount namespace it may mount a tmpfs in."""
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs tmpfs /mnt"], capture_output=True,
                           check=False) if shutil.which("unshare") else None
    return probe is not None and probe.returncode == 0


def _needs_mount() -> None:
    if not can_mount():
        pytest.skip("needs unshare -rm (a user and mount namespace) to mount in")


def in_tmpfs(mount_point: Path, options: str) -> tuple[str, ...]:
    """A command prefix that runs the command with a fresh tmpfs (``options``) at ``mount_point``."""
    _needs_mount()
    mount_point.mkdir(parents=True, exist_ok=True)
    return ("unshare", "-rm", "sh", "-c", f'mount -t tmpfs -o {options} tmpfs "$0" && shift && exec "$@"',
            str(mount_point), "--")


def read_only(folder: Path) -> tuple[str, ...]:
    """A command prefix that runs the command with ``folder`` (and what it holds) read-only: a read-only disk, or a
    folder the user may not write to, as even root meets it (``EROFS``)."""
    _needs_mount()
    return ("unshare", "-rm", "sh", "-c",
            'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && shift && exec "$@"', str(folder), "--")
