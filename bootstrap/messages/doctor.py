"""Messages of the hardware report (``qwenkit doctor``): check names, verdicts, reasons and hints."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
}
