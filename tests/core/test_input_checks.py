"""``check_text``: a value that will end up in a path, URL, start script or unit file is refused at once (exit 2)
when it holds a control character or is too long to be meant; anything printable, any language, passes unchanged.
"""

from __future__ import annotations

import pytest

from bootstrap.core.errors import ExitCode, UsageError
from bootstrap.core.input_checks import MAX_TEXT, check_text, decimal_int

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


@pytest.mark.parametrize(("text", "signed", "expected"), [
    ("4096", False, 4096), (" 8192\n", False, 8192), ("007", False, 7), ("-9", True, -9), ("-9", False, None),
    ("\u00b2", False, None), ("4096\u00b2", False, None), ("\u0664", False, 4), ("\uff14\uff10", False, 40),
    ("", False, None), (None, False, None), ("-", True, None), ("+5", False, None), ("1_000", False, None),
    ("9" * 40, False, int("9" * 40)), ("9" * 41, False, None), ("9" * 5000, False, None),
])
def test_decimal_int_takes_ascii_digits_only(text: str | None, signed: bool, expected: int | None) -> None:
    """What ``int()`` would refuse (a superscript, 5000 digits) is not a number here, nor are ``1_000`` and ``+5``:
    the caller refuses it as bad input. Decimal digits of other scripts (the full-width ``４０`` a Chinese input
    method types) are read as ``int()`` reads them."""
    assert decimal_int(text, signed=signed) == expected
