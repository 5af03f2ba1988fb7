"""The tool-call proof (bootstrap/verify/tools_check.py) against the test bed's real llama-server: each outcome a
model's server can give, and the report that offers the agent example only where tools work."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from bootstrap.fetch.http_session import local_session
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.verify import tools_check
from bootstrap.verify.chat import print_report, verify_server
from bootstrap.verify.tools_check import check_tools, tools_line
from bootstrap.verify.tools_record import ToolsCheck, tools_from_json
from tests.support.llama import LlamaServer, end_process, free_port
from tests.support.qwen_chat_model import upstream_qwen_template

pytestmark = pytest.mark.usefixtures("english")
ARGS = ("-c", "2048", "-np", "1", "-t", "2")


def _check(srv: LlamaServer, args: tuple[str, ...]) -> ToolsCheck:
    with local_session() as session:
        return check_tools(session, srv.base_url, "qwen", args, srv.headers(), timeout=120)


def test_tool_call_proof_ok_with_the_qwen_family_template(llama_server: Path, qwen_chat_gguf: Path) -> None:
    args = (*ARGS, "--jinja", "--reasoning", "on")  # thinking on by default: the proof turns it off for itself
    with LlamaServer(llama_server, qwen_chat_gguf, args, api_key="k") as srv:
        check = _check(srv, args)
    assert check.ok and check.detail == 'get_time({"city":"ok."})'
    assert tools_line(check) == 'tools ok: the model called a tool through the server (get_time({"city":"ok."}))'


def test_tool_call_proof_without_jinja_asks_nothing(llama_server: Path, tiny_models: dict[str, Path]) -> None:
    args = (*ARGS, "--no-jinja", "--chat-template", "chatml")
    with LlamaServer(llama_server, tiny_models["llama"], args) as srv:
        check = _check(srv, args)
    assert check.reason == "no_jinja" and not check.ok
    assert "--no-jinja" in tools_line(check)


def test_tool_call_proof_template_without_tools(llama_server: Path, tiny_models: dict[str, Path]) -> None:
    """The generated models' ChatML template has no tools: llama-server says so in ``/props``."""
    with LlamaServer(llama_server, tiny_models["llama"], (*ARGS, "--jinja")) as srv:
        check = _check(srv, (*ARGS, "--jinja"))
    assert check.reason == "no_tools_template", check


def test_tool_call_proof_refused_names_the_server_error(llama_server: Path,
                                                        make_tiny_model: Callable[..., Path]) -> None:
    """The family's template on a toy vocabulary: the grammar cannot be built, the server answers 400."""
    model = make_tiny_model("llama", chat_template=upstream_qwen_template().read_text(encoding="utf-8"))
    with LlamaServer(llama_server, model, (*ARGS, "--jinja")) as srv:
        check = _check(srv, (*ARGS, "--jinja"))
    assert check.reason == "refused" and check.detail.startswith("HTTP 400: "), check
    assert "Failed to initialize samplers" in check.detail


def test_tool_call_proof_without_a_call_is_not_ok() -> None:
    """A 200 answer whose message carries no call of the proof tool (a model that ignored it), as llama-server
    shapes it: not proven, with what came back."""
    answered = {"choices": [{"finish_reason": "length", "message": {"role": "assistant", "content": "Paris is nice"}}]}
    wrong = {"choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "get_time", "arguments": "not json"}}]}}]}
    for doc in (answered, wrong):
        function, _ = tools_check._call_of(doc)
        assert function is None


def test_tool_call_record_round_trips() -> None:
    check = ToolsCheck("refused", "HTTP 500: x")
    assert tools_from_json(check.to_json()) == check
    assert tools_from_json({"reason": "made up"}) is None and tools_from_json(None) is None


@pytest.mark.parametrize("jinja", [True, False])
def test_tool_call_report_offers_the_agent_example_only_where_tools_work(
        engine_bin_dir: Path, qwen_chat_gguf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        jinja: bool) -> None:
    """agent.py calls a tool: the report names it where the proof passed, and says why not elsewhere (the server
    started as the start script starts it; the venv's interpreter and example are there as files)."""
    home = tmp_path / "home"
    for made in (home / "venv" / "bin" / "python", home / "venv" / "examples" / "agent.py"):
        made.parent.mkdir(parents=True, exist_ok=True)
        made.write_text("", encoding="utf-8")
    key = home / "secrets" / "api-key"
    key.parent.mkdir()
    key.write_text("sk-test\n", encoding="utf-8")
    args = (*ARGS, "--jinja") if jinja else (*ARGS, "--no-jinja", "--chat-template", "chatml")
    spec = LaunchSpec(home=home, system=platform.system(), engine_dir=engine_bin_dir,
                      server=engine_bin_dir / "llama-server", model=qwen_chat_gguf, mmproj=None, args=args,
                      alias="qwen", api_key_file=key, port=free_port())
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMA_ARG_") and k != "LLAMA_API_KEY"}
    with open(tmp_path / "server.log", "wb") as log:
        proc = subprocess.Popen(spec.argv(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
    try:
        report = verify_server(spec, "sk-test", timeout=120, process=proc)
    finally:
        end_process(proc)
    print_report(report)
    shown = capsys.readouterr().out
    assert report.tools is not None and report.tools.ok is jinja
    assert bool(report.agent) is jinja and ("examples/agent.py" in shown) is jinja
    assert ("tools ok:" in shown) is jinja and ("--no-jinja" in shown) is not jinja
