"""A server that stalls the way upstream reports (llama.cpp issue #27388): ``/health`` 200, completions never
answered. A real process listening on a real port, for the supervisor's stall check (llama-server itself cannot be
made to keep answering ``/health`` while its generation hangs; SIGSTOP stops both).

    python stalled_server.py PORT MODE

MODE ``stalled``: ``/slots`` answers with one slot that never moves. MODE ``busy``: completions are not answered
either, but ``/slots`` shows tokens being generated (a long stream in flight): not a stall. MODE ``router``: as
llama-server's router with a stalled child: a chat or ``/slots`` naming no model is answered 400 ("model name is
missing from the request", b11434 ``server-models.cpp``), one naming a model hangs / never moves; the names asked
for are appended to ``models-asked.txt`` in the working folder. Prints ``ready``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, body: dict[str, object] | list[object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _missing_model(self) -> None:
        data = json.dumps({"error": {"code": 400, "message": "model name is missing from the request",
                                     "type": "invalid_request_error"}}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.server.mode == "router" and self.path.startswith("/slots") and "model=" not in self.path:
            self._missing_model()
        elif self.path == "/health":
            self._answer({"status": "ok"})
        elif self.path.startswith("/slots"):
            moving = self.server.mode == "busy"
            decoded = int((time.monotonic() - self.server.born) * 20) if moving else 5
            self._answer([{"id": 0, "id_task": 7, "is_processing": True, "n_prompt_tokens": 12,
                           "next_token": [{"has_next_token": True, "n_decoded": decoded}]}])
        else:
            self._answer({})

    def do_POST(self) -> None:  # a completion: never answered
        if self.server.mode == "router":
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not body.get("model"):
                self._missing_model()
                return
            with open("models-asked.txt", "a", encoding="utf-8") as asked:
                asked.write(f"{body['model']}\n")
        threading.Event().wait(3600)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, mode: str) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.mode = mode
        self.born = time.monotonic()


def main() -> None:
    server = _Server(int(sys.argv[1]), sys.argv[2])
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
