"""``qwenkit selfcheck`` (hidden): proves the packaged resources are found in this layout.

The frozen setup and the wheel install tests run it; it prints where ``templates/`` and ``payload/`` were found and
the setup's first-start checks (``setup_checks``: templates, payload, TLS trust store), empty when all pass.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from bootstrap import __version__
from bootstrap.app.setup_checks import first_start_checks
from bootstrap.core import console
from bootstrap.core.resources import resource_dir


def run(args: argparse.Namespace) -> int:
    console.emit_json({
        "version": __version__,
        "frozen": bool(getattr(sys, "frozen", False)),
        "templates": str(resource_dir("templates")),
        "payload": str(resource_dir("payload")),
        "first_start_checks": [dataclasses.asdict(p) for p in first_start_checks()],  # [] = the build is whole
    })
    return 0
