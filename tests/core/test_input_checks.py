"""``check_text``: a value that will end up in a path, URL, start script or unit file is refused at once (exit 2)
when it holds a control character or is too long to be meant; anything printable, any language, passes unchanged.
"""

from __future__ import annotations

import pytest

from bootstrap.core.errors import ExitCode, UsageError
from bootstrap.core.input_checks import MAX_TEXT, check_text

pytestmark = pytest.mark.usefixtures("english")


@pytest.mark.parametrize("value", ["qwen3.6-35b-a3b:UD-IQ4_XS", "/home/张三/Qwen Kit", "C:\\Users\\Ålice\\models",
                                   "https://user:pw@intranet/bundle", "", "a\u00a0b"])
def test_printable_values_pass_unchanged(value: str) -> None:
    """Spaces, Chinese, backslashes, a no-break space (U+00A0, past the C1 range): all returned as given."""
    assert check_text("MODEL", value) is value


def test_the_limit_is_inclusive_and_named() -> None:
    assert check_text("--home", "x" * MAX_TEXT) == "x" * MAX_TEXT
    with pytest.raises(UsageError) as err:
        check_text("--home", "x" * (MAX_TEXT + 1))
    assert err.value.exit_code == ExitCode.USAGE and err.value.hint
    assert err.value.message == f"--home is {MAX_TEXT + 1} characters long; at most {MAX_TEXT} are accepted"
    assert check_text("--host", "h" * 10, limit=10) == "h" * 10
    with pytest.raises(UsageError):
        check_text("--host", "h" * 11, limit=10)


@pytest.mark.parametrize("char", ["\x00", "\t", "\n", "\r", "\x1b", "\x7f", "\x85", "\x9b", "\x9f"])
def test_control_characters_are_refused_and_shown_escaped(char: str) -> None:
    """C0, DEL and C1 (``\\x9b`` is a one-byte CSI): refused, and the message never carries the raw character,
    so the error line itself cannot drive the terminal."""
    with pytest.raises(UsageError) as err:
        check_text("QWENKIT_HOME", f"/data/qwen{char}kit")
    message = err.value.message
    assert message.startswith("QWENKIT_HOME holds a control character")
    assert repr(char) in message and char not in message
