"""``install --rpc``'s endpoint list: private or loopback IPv4 with a port, as llama.cpp's ``--rpc`` parses it."""

from __future__ import annotations

import pytest

from bootstrap.core.errors import UsageError
from bootstrap.core.private_address import MAX_WORKERS, check_rpc_endpoints

pytestmark = pytest.mark.usefixtures("english")


@pytest.mark.parametrize(("text", "endpoints"), [
    ("192.168.1.20:50052", ("192.168.1.20:50052",)),
    (" 10.0.0.2:50052 , 100.64.3.4:6000 ", ("10.0.0.2:50052", "100.64.3.4:6000")),
    ("127.0.0.1:50052,127.0.0.1:50052", ("127.0.0.1:50052",)),  # named twice: one worker
    ("none", ()),
])
def test_good_lists(text: str, endpoints: tuple[str, ...]) -> None:
    assert check_rpc_endpoints(text) == endpoints


@pytest.mark.parametrize(("text", "said"), [
    ("192.168.1.20", "is not IP:PORT"),
    ("192.168.1.20:0", "is not IP:PORT"),
    ("192.168.1.20:70000", "is not IP:PORT"),
    ("192.168.1.20:x", "is not IP:PORT"),
    ("fd00::1:50052", "is not IP:PORT"),  # llama.cpp splits at the first ':' (IPv6 cannot be named)
    ("pc-2.lan:50052", "is not an IP address"),
    ("8.8.8.8:50052", "8.8.8.8 is not a private address"),
    ("0.0.0.0:50052", "never listens on every network"),
    ("10.0.0.2:50052,", "is not IP:PORT"),
])
def test_bad_lists_are_one_line_errors(text: str, said: str) -> None:
    with pytest.raises(UsageError) as caught:
        check_rpc_endpoints(text)
    assert said in caught.value.message and "\n" not in caught.value.message


def test_too_many_workers() -> None:
    text = ",".join(f"10.0.0.{n}:50052" for n in range(1, MAX_WORKERS + 2))
    with pytest.raises(UsageError) as caught:
        check_rpc_endpoints(text)
    assert f"at most {MAX_WORKERS}" in caught.value.message
