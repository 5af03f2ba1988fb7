"""Place stage, chat template: the kit's template for a Qwen3.5/3.6 model, derived from the installed file's own.

The model's ``tokenizer.chat_template`` is read from the GGUF in the home (the bytes that will serve, so a model
upgraded upstream brings its new template with it), the named fixes of ``plan/chat_template.py`` are applied, and
the result is written to ``<home>/chat-templates/<family>-<sha256 prefix>.jinja``, which the server gets with
``--chat-template-file`` (``LaunchSpec.chat_template``). The name follows the text: an upgrade writes a new file
beside the one the running server reads, so a rollback still finds the old one; ``cleanup`` removes what no model
names any more. A template of the family whose shape changed is not patched: the model's own serves, the install
says so on stderr, and the record keeps why (``problem``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.console import t, warn
from bootstrap.core.home import Home
from bootstrap.plan.chat_template import DerivedTemplate, TemplateShapeError, derive
from bootstrap.plan.gguf_header import read_header

TEMPLATE_KEY = "tokenizer.chat_template"


@dataclass(frozen=True)
class PlacedTemplate:
    """What serves as the model's chat template: ``path`` the kit's (None: the model's own), with what it did."""

    path: Path | None
    derived: DerivedTemplate | None = None
    problem: str | None = None  # a template of the family that no fix could be applied to: "<fix>: <what>"


def model_template(model: Path) -> str | None:
    """The chat template a GGUF carries (``tokenizer.chat_template``), or None."""
    value = read_header(model).metadata.get(TEMPLATE_KEY)
    return value if isinstance(value, str) and value else None


def template_path(home: Home, derived: DerivedTemplate) -> Path:
    return home.chat_templates_dir / f"{derived.family}-{derived.sha256[:16]}.jinja"


def place_chat_template(home: Home, model: Path) -> PlacedTemplate:
    """Derive and write the kit's template for the GGUF at ``model`` (idempotent: an identical file is kept)."""
    try:
        derived = derive(model_template(model))
    except TemplateShapeError as exc:
        warn(t("template.shape_changed", fix=exc.fix, missing=exc.missing))
        return PlacedTemplate(None, problem=str(exc))
    if derived is None:
        return PlacedTemplate(None)
    path = template_path(home, derived)
    data = derived.text.encode("utf-8")
    try:
        current = path.read_bytes()
    except OSError:
        current = None
    if current != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
    return PlacedTemplate(path, derived)
