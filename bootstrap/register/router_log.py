"""Which lines of the server's log are one model's (``qwenkit logs --model NAME``), read as they come.

With several models llama-server runs as a router (llama.cpp b11434 ``tools/server/server-models.cpp``) and every
child's output reaches the router's log with the child's port in front (``[40123] 0.00.113.354 I ...``). The
router names the model a port serves when it starts the child (``spawning server instance with name=NAME on port
40123``, followed by its arguments one per ``load:`` line); a port may serve another model after a reload, so the
log is read in order and each naming stands for the lines after it. The router's own lines about a model name it
(``instance name=NAME exited``, ``(startup) loading model NAME``, ``proxying request to model NAME``). One model's
server (no router) writes nothing but that model's lines.

Lines are bytes as the server wrote them (any prefix before them, the supervisor's time of day or journald's,
is kept); a line that ends without a newline is held until its end arrives.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable

_SPAWN = re.compile(rb"spawning server instance with name=(\S+) on port (\d+)")
_ARGS = re.compile(rb"spawning server instance with args:|\bload:   ")
_CHILD = re.compile(rb"\[(\d{1,5})\] ")
_NAMED = re.compile(rb"(?:name=|model '?)([^\s']+)")


class ModelLines:
    """Feed the log's bytes in order (``feed``); the lines of ``name`` go to ``emit``, one whole line at a time.
    ``router``: False for a one-model server, whose every line is its model's."""

    def __init__(self, name: str, emit: Callable[[bytes], object], *, router: bool = True) -> None:
        self.name = name.encode("utf-8")
        self.emit = emit
        self.router = router
        self._ports: dict[bytes, bytes] = {}  # port → the model it serves now
        self._args_of: bytes | None = None  # the model whose arguments the router is listing
        self._partial = b""

    def feed(self, data: bytes) -> None:
        data = self._partial + data
        *lines, self._partial = data.split(b"\n")
        for line in lines:
            if self.wants(line):
                self.emit(line + b"\n")

    def open_line(self) -> bytes:
        """The line still being written (no newline yet) when it is the model's, else nothing."""
        return self._partial if self._partial and self.wants(self._partial) else b""

    def wants(self, line: bytes) -> bool:
        """Whether ``line`` is the model's (and what it says about which port serves which model, kept)."""
        if not self.router:
            return True
        spawned = _SPAWN.search(line)
        if spawned:
            self._ports[spawned.group(2)] = spawned.group(1)
            self._args_of = spawned.group(1)
            return spawned.group(1) == self.name
        child = _CHILD.search(line)
        if child and child.start() < 40:  # a child's line: its port comes first (after a time of day, if any)
            self._args_of = None
            return self._ports.get(child.group(1)) == self.name
        if self._args_of is not None and _ARGS.search(line):
            return self._args_of == self.name
        self._args_of = None
        return any(m.group(1) == self.name for m in _NAMED.finditer(line))


def last_model_lines(chunks: Iterable[bytes], name: str, count: int, *, router: bool = True
                     ) -> tuple[bytes, ModelLines]:
    """The last ``count`` lines of ``name`` in the log read from ``chunks`` (oldest first), and the filter, which
    knows by then which port serves which model (``logs -f`` goes on with it)."""
    kept: deque[bytes] = deque(maxlen=count)
    lines = ModelLines(name, kept.append, router=router)
    for chunk in chunks:
        lines.feed(chunk)
    last = lines.open_line()
    if last:
        kept.append(last)
    return b"".join(kept) if count else b"", lines
