"""What the zero-network test does *inside* the network namespace, as one process (``python -m`` this module).

A server started in a namespace with no network is reachable only from inside it, so the install, the chat request,
the rerun with the drive unplugged and the final stop all run here, and the results come back as one JSON document
on stdout. The spec (argv[1], JSON):

    {"installer": [argv to run qwenkit or the setup], "bundle": "<folder>", "home": "<home>",
     "pass_bundle": true|false,  # false: the setup finds the bundle beside itself
     "kit": [argv to run qwenkit once installed],  # default: this checkout's (``python -m bootstrap``)
     "encoding": "utf-8"}        # of the commands' output (a Windows program's under Wine: its ANSI code page)

A command is over when its process is, not when its pipes close: a detached supervisor may inherit them (Wine).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.request
from pathlib import Path
from typing import Any

from tests.support.wine import run_until_exit

REPO = Path(__file__).resolve().parents[2]
QUESTION = "The capital of France is"


def _run(argv: list[str], env: dict[str, str], encoding: str) -> dict[str, Any]:
    proc = run_until_exit(argv, env, 900, encoding)
    return {"argv": argv, "rc": proc.returncode, "stdout": proc.stdout[-40000:], "stderr": proc.stderr[-40000:]}


def _chat(home: Path) -> dict[str, Any]:
    """One real chat request to the installed server (loopback inside the namespace)."""
    state = json.loads((home / "state.json").read_text(encoding="utf-8"))
    key = (home / "secrets" / "api-key").read_text(encoding="utf-8").strip()
    body = json.dumps({"messages": [{"role": "user", "content": QUESTION}], "max_tokens": 12,
                       "temperature": 0}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{state['server']['port']}/v1/chat/completions", data=body,
                                     headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy: loopback only
    with opener.open(request, timeout=120) as response:
        answer = json.loads(response.read())
    return {"status": response.status, "content": answer["choices"][0]["message"]["content"],
            "model": answer.get("model")}


def main() -> int:
    spec = json.loads(sys.argv[1])
    env = dict(os.environ)
    home, bundle = Path(spec["home"]), Path(spec["bundle"])
    # The interfaces of this process's network namespace (sysfs may still show the host's).
    out: dict[str, Any] = {"interfaces": sorted(name for _index, name in socket.if_nameindex())}
    extra = ["--bundle", str(bundle)] if spec.get("pass_bundle", True) else []
    kit, encoding = spec.get("kit", [sys.executable, "-m", "bootstrap"]), spec.get("encoding", "utf-8")
    out["install"] = _run([*spec["installer"], "install", "--yes", "--no-service", *extra], env, encoding)
    if out["install"]["rc"] == 0:
        out["chat"] = _chat(home)
        # The drive is unplugged: a rerun that names no source still finds the install up to date and serving.
        unplugged = bundle.with_name(bundle.name + " (unplugged)")
        os.rename(bundle, unplugged)
        try:
            out["rerun"] = _run([*kit, "install", "--yes", "--no-service"], env, encoding)
            out["chat_after_rerun"] = _chat(home)
        finally:
            os.rename(unplugged, bundle)
    out["stop"] = _run([*kit, "service", "stop"], env, encoding)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
