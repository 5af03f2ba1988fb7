"""``qwenkit selfcheck`` (hidden): proves the packaged resources are found in this layout.

The frozen setup and the wheel install tests run it; it prints where ``templates/`` and ``payload/`` were found.
"""

from __future__ import annotations

import argparse
import sys

from .. import __version__, console
from ..resources import resource_dir


def run(args: argparse.Namespace) -> int:
    console.emit_json({
        "version": __version__,
        "frozen": bool(getattr(sys, "frozen", False)),
        "templates": str(resource_dir("templates")),
        "payload": str(resource_dir("payload")),
    })
    return 0
