"""Messages of the chat template the kit serves Qwen models with (place) and of the tool-call proof (verify)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "template.shape_changed": {
        "en": "this model's chat template is of the Qwen3.5 family but no longer has the shape the kit's fix "
              "changes ({fix}: {missing}); it serves as it is, so agent clients that send a second system "
              "message (Claude Code, Codex) will be refused",
        "zh": "此模型的聊天模板属于 Qwen3.5 系列，但已不是本工具修正所针对的形式（{fix}：{missing}）；将按原样使用，"
              "因此会发送第二条系统消息的智能体客户端（Claude Code、Codex）的请求将被拒绝",
    },
    "fresh.template_missing": {
        "en": "the chat template the server starts with is missing ({path})",
        "zh": "服务器启动所用的聊天模板丢失（{path}）",
    },
    "tools.ok": {
        "en": "tools ok: the model called a tool through the server ({detail})",
        "zh": "工具调用正常：模型通过服务器调用了工具（'{detail}'）",
    },
    "tools.no_jinja": {
        "en": "tools unavailable: the server runs with --no-jinja (a model without a chat template of its own); "
              "agent clients and tool calls need a model that has one",
        "zh": "工具调用不可用：服务器以 --no-jinja 运行（模型自身没有聊天模板）；"
              "智能体客户端和工具调用需要带聊天模板的模型",
    },
    "tools.no_tools_template": {
        "en": "tools unavailable: this model's chat template does not describe tools",
        "zh": "工具调用不可用：此模型的聊天模板不支持工具",
    },
    "tools.no_call": {
        "en": "tools not proven: the model answered without calling the tool ({detail})",
        "zh": "工具调用未能证实：模型未调用工具便作答（'{detail}'）",
    },
    "tools.refused": {
        "en": "tools failed: the server refused a tool-call request ({detail})",
        "zh": "工具调用失败：服务器拒绝了工具调用请求（'{detail}'）",
    },
    "tools.unreachable": {
        "en": "tools not proven: the tool-call request got no answer ({detail})",
        "zh": "工具调用未能证实：工具调用请求没有得到回应（'{detail}'）",
    },
}
