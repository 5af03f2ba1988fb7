"""The conversation of a terminal chat and its streamed answers.

The whole history goes with every request (``/v1/chat/completions`` is stateless; llama-server reuses the prompt
cache for the common prefix, ``cache_prompt`` on by default, llama.cpp ``tools/server/README.md``). Thinking is
switched per request through the chat template's ``enable_thinking`` in ``chat_template_kwargs``, which the server
reads for this request only (llama.cpp ``tools/server/server-common.cpp``, "parse the enable_thinking kwarg");
left out, the server's own ``--reasoning`` setting decides.

The answer is read on a worker thread and handed over through a queue the main thread polls: a blocking socket read
is not interrupted by Ctrl-C on Windows, a queue poll with a timeout is (the interpreter checks for signals between
polls). ``stop`` shuts the socket down, so the server sees the client gone and ends the generation.
"""

from __future__ import annotations

import contextlib
import queue
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import requests

from bootstrap.core.console import t
from bootstrap.core.errors import QwenKitError, ServerError, UsageError
from bootstrap.fetch.http_session import local_session
from bootstrap.fetch.records import cause_text
from bootstrap.verify.chat import StreamPart, stream_parts
from bootstrap.verify.server_text import server_message

CONNECT_S = 5.0
# Between two chunks: a model being loaded by the router, or a long prompt being read, sends nothing for a while.
READ_S = 600.0
_POLL_S = 0.1
_END = object()


@dataclass
class Conversation:
    """What has been said, to which model, and how the next request asks."""

    url: str  # the OpenAI base URL, http://HOST:PORT/v1
    key: str = field(repr=False)
    model: str
    think: bool | None = None  # None: the server's own setting
    messages: list[dict[str, str]] = field(default_factory=list)

    def body(self) -> dict[str, Any]:
        """The streamed request for the conversation as it stands (the last message the user's question)."""
        body: dict[str, Any] = {"model": self.model, "messages": list(self.messages), "stream": True,
                                "stream_options": {"include_usage": True}}
        if self.think is not None:
            body["chat_template_kwargs"] = {"enable_thinking": self.think}
        return body

    def ask(self, question: str) -> Answer:
        """Add the question and start the answer (the caller keeps or takes back the turn: ``keep``/``forget``)."""
        self.messages.append({"role": "user", "content": question})
        return Answer(f"{self.url}/chat/completions", self.key, self.body())

    def keep(self, answer: str) -> None:
        """The answer (or what was shown of it before a stop) joins the history."""
        self.messages.append({"role": "assistant", "content": answer})

    def forget_question(self) -> None:
        """Take back the last question (its answer failed or was stopped before any text)."""
        if self.messages and self.messages[-1]["role"] == "user":
            self.messages.pop()

    def clear(self) -> None:
        self.messages.clear()


class Answer:
    """One streamed answer: iterate for its parts; ``stop`` ends it from the main thread at any moment."""

    def __init__(self, url: str, key: str, body: dict[str, Any]) -> None:
        self._url, self._key, self._body = url, key, body
        self._parts: queue.Queue[object] = queue.Queue()
        self._stopped = threading.Event()
        self._response: requests.Response | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, name="qwenkit-answer", daemon=True)
        self._thread.start()

    def __iter__(self) -> Iterator[StreamPart]:
        """The parts as they arrive; a failure of the request or the stream is raised here, in the main thread."""
        while True:
            try:
                item = self._parts.get(timeout=_POLL_S)
            except queue.Empty:
                continue
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            assert isinstance(item, StreamPart)
            yield item

    def stop(self) -> None:
        """Close the stream: the worker's read ends and the server stops generating for a client that is gone."""
        self._stopped.set()
        with self._lock:
            response = self._response
        if response is None:
            return
        conn = getattr(response.raw, "connection", None) or getattr(response.raw, "_connection", None)
        sock = getattr(conn, "sock", None)
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a read blocked in the worker, sends FIN
        with contextlib.suppress(Exception):
            response.close()

    def _read(self) -> None:
        try:
            with local_session() as session:
                response = self._post(session)
                with self._lock:
                    self._response = response
                if self._stopped.is_set():
                    response.close()
                    return
                with response:
                    self._check(response)
                    done = False
                    for part in stream_parts(response, "POST /v1/chat/completions"):
                        if self._stopped.is_set():
                            return
                        done = done or part.done
                        self._parts.put(part)
                    if not done and not self._stopped.is_set():
                        raise ServerError(t("chat.err_cut"), t("launch.hint_server_install"))
        except QwenKitError as exc:
            if not self._stopped.is_set():
                self._parts.put(exc)
        except (requests.RequestException, OSError, ValueError) as exc:
            if not self._stopped.is_set():  # a read cut by ``stop`` is no failure
                self._parts.put(ServerError(t("chat.err_unreachable", url=self._url,
                                              reason=cause_text(exc, READ_S)[0]),
                                            t("launch.hint_server_install")))
        finally:
            self._parts.put(_END)

    def _post(self, session: requests.Session) -> requests.Response:
        return session.post(self._url, json=self._body, headers={"Authorization": f"Bearer {self._key}"},
                            timeout=(CONNECT_S, READ_S), stream=True)

    def _check(self, response: requests.Response) -> None:
        if response.status_code in (401, 403):
            raise UsageError(t("chat.err_key_refused", url=self._url, status=response.status_code),
                             t("launch.hint_key_install"))
        if response.status_code != 200:
            raise ServerError(t("chat.err_status", status=response.status_code, message=server_message(response)),
                              t("launch.hint_server_install"))
