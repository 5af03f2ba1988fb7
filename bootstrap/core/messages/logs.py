"""Messages of ``qwenkit logs`` and of the log folder a server start writes to (``register/base.safe_logs_dir``)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "cmd.logs": {
        "en": "show the server's log (the last lines; -f follows it)",
        "zh": "显示服务器日志（最后几行；-f 持续跟踪）",
    },
    "arg.logs_follow": {
        "en": "keep printing what the server writes, until Ctrl-C",
        "zh": "持续输出服务器写入的内容，直到按下 Ctrl-C",
    },
    "arg.logs_model": {
        "en": "only the lines of this model (several models: its name as 'qwenkit status' lists it)",
        "zh": "只显示该模型的日志行（多个模型时：即 'qwenkit status' 列出的名称）",
    },
    "arg.logs_lines": {
        "en": "how many of the last lines to print (default 50)",
        "zh": "输出最后多少行（默认 50）",
    },
    "logs.err_lines": {
        "en": "-n takes a number of lines, 0 or more (got {value})",
        "zh": "-n 需要一个不小于 0 的行数（收到 {value}）",
    },
    "logs.err_none": {"en": "no server log yet at {path}", "zh": "{path} 处尚无服务器日志"},
    "logs.hint_none": {
        "en": "The server writes it once it starts: 'qwenkit service start' (or 'qwenkit logs -f' to wait for it).",
        "zh": "服务器启动后才会写入日志：运行 'qwenkit service start'（或用 'qwenkit logs -f' 等待它出现）。",
    },
    "logs.err_nothing_installed": {
        "en": "nothing is installed in {home}, so there is no server log",
        "zh": "{home} 中没有安装任何内容，因此没有服务器日志",
    },
    "logs.hint_nothing_installed": {
        "en": "Run 'qwenkit install' (or give the install folder with --home).",
        "zh": "请运行 'qwenkit install'（或用 --home 指定安装目录）。",
    },
    "logs.waiting": {
        "en": "no server log yet at {path}; waiting for the server to write one (Ctrl-C to stop)",
        "zh": "{path} 处尚无服务器日志；正在等待服务器写入（按 Ctrl-C 停止）",
    },
    "logs.err_viewer": {
        "en": "{command} is not installed here, and the server's log is in the systemd journal",
        "zh": "此处未安装 {command}，而服务器日志保存在 systemd 日志中",
    },
    "logs.hint_viewer": {
        "en": "Install systemd's journalctl, or run the server with the start script, whose log is a file.",
        "zh": "请安装 systemd 的 journalctl，或改用启动脚本运行服务器（其日志是一个文件）。",
    },
    "logs.err_link": {
        "en": "{path} is a link; the server's log is never written or read through a link (it could point anywhere)",
        "zh": "{path} 是一个链接；服务器日志从不通过链接读写（链接可能指向任何地方）",
    },
    "logs.hint_link": {
        "en": "Remove the link (the folder is made again at the next start).",
        "zh": "请删除该链接（下次启动时会重新创建该文件夹）。",
    },
}
