"""Messages of ``qwenkit run`` / ``qwenkit chat`` (the chat in the terminal, docs/terminal-chat.md)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "cmd.run": {
        "en": "chat with an installed model in the terminal; a question after MODEL, or on stdin, "
              "is answered once",
        "zh": "在终端里与已安装的模型对话；在 MODEL 后或通过标准输入给出问题时只回答这一次",
    },
    "arg.run_model": {
        "en": "the installed model to chat with (default: the install's default model)",
        "zh": "要对话的已安装模型（默认：安装的默认模型）",
    },
    "arg.run_prompt": {
        "en": "a question to answer once, then exit (as 'ollama run MODEL \"...\"')",
        "zh": "只回答这一个问题后退出（同 'ollama run MODEL \"…\"'）",
    },
    "arg.run_think": {
        "en": "thinking mode for each request (default: the server's own setting); /think switches it in the chat",
        "zh": "每个请求的思考模式（默认：服务器自身的设置）；对话中可用 /think 切换",
    },
    "arg.run_hide_thinking": {
        "en": "do not show the model's reasoning (it is shown dimmed on a terminal otherwise)",
        "zh": "不显示模型的推理过程（否则在终端中以暗色显示）",
    },
    "arg.run_verbose": {
        "en": "after each answer, the tokens of the prompt and the answer and the speed (on stderr)",
        "zh": "每次回答后显示提示词与回答的 token 数和速度（输出到标准错误）",
    },
    "chat.banner": {
        "en": "Chatting with {model} at {url}. Type /help for commands; /bye or 'Ctrl+D' quits.",
        "zh": "正在与 {model} 对话（{url}）。输入 /help 查看命令；输入 /bye 或按 'Ctrl+D' 退出。",
    },
    "chat.help": {
        "en": "Commands:\n"
              "  /think on|off    thinking mode for the next questions\n"
              "  /think show|hide show or hide the model's reasoning\n"
              "  /clear           forget the conversation so far\n"
              "  /model NAME      chat with another installed model ({models})\n"
              "  /help            this list\n"
              "  /bye             quit (so does 'Ctrl+D')\n"
              "Several lines: start and end them with \"\"\", or end a line with \\.\n"
              "'Ctrl+C' stops an answer; at an empty prompt, twice in a row quits.",
        "zh": "命令：\n"
              "  /think on|off    之后问题的思考模式\n"
              "  /think show|hide 显示或隐藏模型的推理过程\n"
              "  /clear           忘掉目前为止的对话\n"
              "  /model NAME      改用另一个已安装的模型（{models}）\n"
              "  /help            显示本列表\n"
              "  /bye             退出（按 'Ctrl+D' 亦可）\n"
              "多行输入：用 \"\"\" 开始并结束，或在行尾输入 \\。\n"
              "按 'Ctrl+C' 可停止当前回答；在空提示符下连按两次则退出。",
    },
    "chat.thinking_start": {
        "en": "Thinking...",
        "zh": "思考中……",
    },
    "chat.thinking_end": {
        "en": "...done thinking.",
        "zh": "……思考结束。",
    },
    "chat.stopped": {
        "en": "(answer stopped)",
        "zh": "（回答已停止）",
    },
    "chat.quit_hint": {
        "en": "('Ctrl+C' again, /bye or 'Ctrl+D' quits)",
        "zh": "（再按一次 'Ctrl+C'、输入 /bye 或按 'Ctrl+D' 即可退出）",
    },
    "chat.cleared": {
        "en": "Conversation cleared: the next question starts afresh.",
        "zh": "对话已清空：下一个问题将重新开始。",
    },
    "chat.model_now": {
        "en": "Now chatting with {model}; the conversation so far goes with you.",
        "zh": "现在与 {model} 对话；之前的对话内容会一并带上。",
    },
    "chat.unknown_model": {
        "en": "the model '{model}' is not installed here (installed: {models})",
        "zh": "这里没有安装模型“{model}”（已安装：{models}）",
    },
    "chat.hint_model": {
        "en": "Name one of them: 'qwenkit run NAME'; 'qwenkit install MODEL' adds another.",
        "zh": "请指定其中之一：'qwenkit run NAME'；用 'qwenkit install MODEL' 可再添加模型。",
    },
    "chat.unknown_command": {
        "en": "unknown command {command}: /help lists them",
        "zh": "未知命令 {command}：输入 /help 查看命令列表",
    },
    "chat.think_usage": {
        "en": "/think takes on, off, show or hide",
        "zh": "/think 后应为 on、off、show 或 hide",
    },
    "chat.model_usage": {
        "en": "/model takes an installed model's name: {models}",
        "zh": "/model 后应为已安装模型的名称：{models}",
    },
    "chat.think_state": {
        "en": "Thinking: {mode}; reasoning {shown}.",
        "zh": "思考模式：{mode}；推理过程{shown}。",
    },
    "chat.think_on": {"en": "on", "zh": "开启"},
    "chat.think_off": {"en": "off", "zh": "关闭"},
    "chat.think_default": {"en": "the server's setting", "zh": "沿用服务器设置"},
    "chat.reasoning_shown": {"en": "shown", "zh": "显示"},
    "chat.reasoning_hidden": {"en": "hidden", "zh": "隐藏"},
    "chat.err_nothing": {
        "en": "nothing to ask: stdin was empty",
        "zh": "没有要问的内容：标准输入为空",
    },
    "chat.hint_nothing": {
        "en": "Give the question after MODEL ('qwenkit run MODEL \"...\"') or on stdin ('echo ... | qwenkit run'); "
              "in a terminal 'qwenkit run' chats.",
        "zh": "请在 MODEL 后给出问题（'qwenkit run MODEL \"…\"'）或通过标准输入给出（'echo … | qwenkit run'）；"
              "在终端中运行 'qwenkit run' 即可对话。",
    },
    "chat.stats": {
        "en": "prompt {prompt} tokens, answer {answer} tokens, {tps:.1f} tokens/s",
        "zh": "提示词 {prompt} 个 token，回答 {answer} 个 token，每秒 {tps:.1f} 个 token",
    },
    "chat.err_key_refused": {
        "en": "the server at {url} refused this install's key (HTTP {status})",
        "zh": "{url} 上的服务器拒绝了本机安装的密钥（HTTP {status}）",
    },
    "chat.err_status": {
        "en": "the server answered HTTP {status}: {message}",
        "zh": "服务器返回 HTTP {status}：{message}",
    },
    "chat.err_unreachable": {
        "en": "the server at {url} does not answer ({reason})",
        "zh": "{url} 上的服务器没有响应（{reason}）",
    },
    "chat.err_cut": {
        "en": "the answer ended before the server finished it",
        "zh": "服务器尚未完成回答，连接就已中断",
    },
}
