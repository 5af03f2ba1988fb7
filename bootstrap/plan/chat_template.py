"""The chat template the kit serves a Qwen3.5/3.6 model with: the model's own, with named fixes for agent clients.

The Qwen3.5 family's template (Qwen3.6's family; upstream's copy is llama.cpp ``models/templates/Qwen3.5-4B.jinja``)
raises "System message must be at the beginning." for any system message that is not the first one. Agent clients
send such messages, and llama-server (b11434) has no option to fold them (``common/chat.cpp``: the only message
workarounds are developer → system and merging a system message into the next one for templates WITHOUT a system
role), so every request of theirs fails with HTTP 500 (docs/agent-template.md):

- Codex (``POST /v1/responses``) sends ``input`` = [developer, developer, user, user]; the engine maps developer to
  system (``workaround::map_developer_role_to_system``): two system messages at the start.
- Claude Code (``POST /v1/messages``) sends messages = [user, system, ...]: a system message after the first user
  message (the top-level ``system`` list becomes the first system message, ``server_chat_convert_anthropic_to_oai``).

Each fix below is a named transformation of the model's own template text: it finds the exact shape it changes or
raises ``TemplateShapeError`` naming what it missed, so a template that changed upstream is reported, never patched
blindly. A template that is not of this family (no Qwen3.5-style system check and ``<function=`` tool calls) is left
as it is (``derive`` returns None). Ordinary conversations (one system message first, or none) render byte for byte
as with the untouched template: only the shapes the untouched one refuses render differently.

- ``merge-leading-system``: the system messages before the first other message are joined (a blank line between
  them) into the one system turn the family was trained with, where the first one's text went.
- ``system-in-place``: a system message after the conversation started is rendered where the client put it, as a
  ``<|im_start|>system`` turn: the rendering Qwen3's own template (the family's previous generation, the same
  ChatML tokens: llama.cpp ``models/templates/Qwen-Qwen3-0.6B.jinja``) gives a system message that is not first.
  Moving it to the top instead would reorder the conversation and change the prompt's beginning whenever a client
  adds one, so the server would read the whole prompt again (its cache keeps only a common prefix).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass

FAMILY = "qwen3.5"
MERGE_LEADING_SYSTEM = "merge-leading-system"
SYSTEM_IN_PLACE = "system-in-place"

# The family's marks: the check that refuses a later system message, and Qwen3-Coder-style XML tool calls.
_REFUSAL = re.compile(r"raise_exception\(\s*'System message must be at the beginning\.'\s*\)")
_XML_CALLS = "<function="

# merge-leading-system: where the template opens its system turn (tools or not), and the first message's text in it
_BEFORE_SYSTEM_TURN = re.compile(r"\{%-?\s*if tools and tools is iterable and tools is not mapping\s*-?%\}")
_FIRST_SYSTEM_TEXT = re.compile(r"render_content\(\s*messages\[0\]\.content\s*,\s*false\s*,\s*true\s*\)\s*\|\s*trim")
_LEADING_SYSTEM = """{%- set leading_system = namespace(content='', count=0) %}
{%- for message in messages %}
    {%- if message.role == 'system' and leading_system.count == loop.index0 %}
        {%- set part = render_content(message.content, false, true)|trim %}
        {%- if part and leading_system.content %}
            {%- set leading_system.content = leading_system.content + '\\n\\n' + part %}
        {%- elif part %}
            {%- set leading_system.content = part %}
        {%- endif %}
        {%- set leading_system.count = leading_system.count + 1 %}
    {%- endif %}
{%- endfor %}
"""

# system-in-place: the loop's system branch, which renders nothing for the first and refuses the others
_SYSTEM_BRANCH = re.compile(
    r"(?P<open>\{%-?\s*if message\.role == \"system\"\s*-?%\})\s*"
    r"\{%-?\s*if not loop\.first\s*-?%\}\s*"
    r"\{\{-?\s*raise_exception\(\s*'System message must be at the beginning\.'\s*\)\s*-?\}\}\s*"
    r"\{%-?\s*endif\s*-?%\}")
_IN_PLACE = """{%- if loop.index0 >= leading_system.count %}
            {{- '<|im_start|>system\\n' + render_content(message.content, false, true)|trim + '<|im_end|>\\n' }}
        {%- endif %}"""


class TemplateShapeError(ValueError):
    """The template is of the family but not of the shape a fix changes: ``fix`` names the fix, ``missing`` what
    it looked for."""

    def __init__(self, fix: str, missing: str) -> None:
        super().__init__(f"{fix}: {missing}")
        self.fix = fix
        self.missing = missing


@dataclass(frozen=True)
class DerivedTemplate:
    """The model's template with the fixes applied, in order; ``source_sha256`` is the untouched text's."""

    text: str
    fixes: tuple[str, ...]
    family: str
    source_sha256: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def is_family(template: str) -> bool:
    """Whether ``template`` is a Qwen3.5-family template: it refuses a later system message and writes XML calls."""
    return bool(_REFUSAL.search(template)) and _XML_CALLS in template


def _one(pattern: re.Pattern[str], text: str, fix: str, what: str, count: int = 1) -> None:
    found = len(pattern.findall(text))
    if found != count:
        raise TemplateShapeError(fix, f"{what} (expected {count}, found {found})")


def merge_leading_system(template: str) -> str:
    """Join the leading system messages into the first system turn (``MERGE_LEADING_SYSTEM``)."""
    _one(_BEFORE_SYSTEM_TURN, template, MERGE_LEADING_SYSTEM, "the tools check that opens the system turn")
    _one(_FIRST_SYSTEM_TEXT, template, MERGE_LEADING_SYSTEM, "the first system message's text", count=2)
    out = _FIRST_SYSTEM_TEXT.sub("leading_system.content", template)
    start = _BEFORE_SYSTEM_TURN.search(out)
    assert start is not None  # checked above; the substitution does not touch it
    return out[:start.start()] + _LEADING_SYSTEM + out[start.start():]


def system_in_place(template: str) -> str:
    """Render a later system message as a system turn where it stands (``SYSTEM_IN_PLACE``); needs
    ``merge_leading_system`` first (it counts the leading ones)."""
    _one(_SYSTEM_BRANCH, template, SYSTEM_IN_PLACE, "the loop's branch that refuses a later system message")
    if "leading_system.count" not in template:
        raise TemplateShapeError(SYSTEM_IN_PLACE, f"{MERGE_LEADING_SYSTEM} applied first")
    return _SYSTEM_BRANCH.sub(lambda m: m.group("open") + "\n        " + _IN_PLACE, template)


FIXES: tuple[tuple[str, Callable[[str], str]], ...] = (
    (MERGE_LEADING_SYSTEM, merge_leading_system),
    (SYSTEM_IN_PLACE, system_in_place),
)


def derive(template: str | None) -> DerivedTemplate | None:
    """The kit's template for a model whose own is ``template``: None when it is not of the family (served as it
    is); raises ``TemplateShapeError`` when it is, but a fix cannot find its shape."""
    if not template or not is_family(template):
        return None
    text = template
    for _name, fix in FIXES:
        text = fix(text)
    if _REFUSAL.search(text):
        raise TemplateShapeError(SYSTEM_IN_PLACE, "no other system-message check left")
    return DerivedTemplate(text=text, fixes=tuple(name for name, _ in FIXES), family=FAMILY,
                           source_sha256=hashlib.sha256(template.encode("utf-8")).hexdigest())
