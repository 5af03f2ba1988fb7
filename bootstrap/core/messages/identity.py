"""Messages of the server's identity (who holds the port), the key and folders that must not be links, and what
``status``, ``service start`` and ``service status`` say about the running server."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    # -- who holds the port (register/server_identity.py) -------------------------------------------------------
    "identity.stranger": {
        "en": "port {port} is held by PID {pid} ({name}), not by this install's server; nothing was sent to it",
        "zh": "端口 {port} 被进程 {pid}（{name}）占用，它不是本安装的服务器；未向它发送任何内容",
    },
    "identity.hidden": {
        "en": "port {port} is held by a program whose owner this user cannot see (another user's?), so it is not "
              "known to be this install's server; nothing was sent to it",
        "zh": "端口 {port} 被一个当前用户无法查看其所有者的程序占用（可能属于其他用户），无法确认它是本安装的服务器；"
              "未向它发送任何内容",
    },
    "identity.hint": {
        "en": "Stop that program, or move this install to another port: 'qwenkit install --port {other}'.",
        "zh": "请停止该程序，或将本安装改到其他端口：'qwenkit install --port {other}'。",
    },
    # -- the key is never read through a link (place/api_key.py) --------------------------------
    "apikey.link": {
        "en": "{path} is a link; the API key is never read or written through a link (it could point anywhere)",
        "zh": "{path} 是一个链接；API 密钥从不通过链接读写（链接可能指向任何地方）",
    },
    # -- modes others could abuse (core/home_modes.py) -----------------------------------------------------------
    "modes.world_writable": {
        "en": "{path} can be changed by every user of this machine: anyone could alter what the server runs; "
              "make it writable by its owner only (chmod o-w)",
        "zh": "{path} 可被本机所有用户修改：任何人都能改动服务器运行的内容；请改为仅所有者可写（chmod o-w）",
    },
    # -- status: the running server's figures (app/commands/status.py) ------------------------------------------
    "status.line_context": {
        "en": "context    {ctx} tokens per request, {slots} at a time",
        "zh": "上下文     每个请求 {ctx} 个 token，可同时处理 {slots} 个请求",
    },
    "status.line_memory": {
        "en": "memory     {used} in use{swap}{planned}",
        "zh": "内存       已用 {used}{swap}{planned}",
    },
    "status.memory_swap": {"en": " (+{swap} in swap)", "zh": "（另有 {swap} 在交换区）"},
    "status.memory_planned": {"en": "; the plan predicted {planned}", "zh": "；计划预计 {planned}"},
    "status.line_uptime": {"en": "running    for {uptime} (PID {pid})", "zh": "运行时长   {uptime}（进程 {pid}）"},
    "status.line_logs": {"en": "logs       {path}  ('qwenkit logs')", "zh": "日志       {path}（'qwenkit logs'）"},
    "status.duration_h": {"en": "{h} h {m} min", "zh": "{h} 小时 {m} 分钟"},
    "status.duration_m": {"en": "{m} min {s} s", "zh": "{m} 分 {s} 秒"},
    "status.duration_s": {"en": "{s} s", "zh": "{s} 秒"},
    # -- status --open ---------------------------------------------------------------------------------------
    "open.opened": {"en": "Opened {url} in the browser.", "zh": "已在浏览器中打开 {url}。"},
    "open.no_browser": {
        "en": "No browser could be opened here (no display, or none configured): open {url} yourself.",
        "zh": "此处无法打开浏览器（没有图形界面或未配置浏览器）：请自行打开 {url}。",
    },
    # -- service start: waiting for the model (app/commands/service.py) -----------------------------------------
    "service.ready": {
        "en": "Server ready after {seconds} s ({manager}): {url}",
        "zh": "服务器已就绪，用时 {seconds} 秒（{manager}）：{url}",
    },
    "service.still_loading": {
        "en": "the server was started ({manager}) but is still loading the model after {seconds} s",
        "zh": "服务器已启动（{manager}），但 {seconds} 秒后仍在加载模型",
    },
    "service.hint_still_loading": {
        "en": "It keeps loading in the background: 'qwenkit status' says when it is ready, 'qwenkit logs' shows "
              "what it does.",
        "zh": "它会在后台继续加载：'qwenkit status' 会显示何时就绪，'qwenkit logs' 可查看它正在做什么。",
    },
    # -- service status: one sentence a person reads --------------------------------------------------------------
    "service.say_ready": {
        "en": "The server runs under {manager} (PID {pid}) and answers at {url}.",
        "zh": "服务器正在运行（{manager}，进程 {pid}），在 {url} 提供服务。",
    },
    "service.say_loading": {
        "en": "The server runs under {manager} (PID {pid}) and is still loading the model.",
        "zh": "服务器正在运行（{manager}，进程 {pid}），仍在加载模型。",
    },
    "service.say_unanswering": {
        "en": "The server runs under {manager} (PID {pid}) but does not answer yet ({detail}).",
        "zh": "服务器正在运行（{manager}，进程 {pid}），但尚未响应（{detail}）。",
    },
    "service.say_active_elsewhere": {
        "en": "{manager} reports the server as running, but this install's server does not hold port {port}.",
        "zh": "服务管理器（{manager}）显示服务器正在运行，但占用端口 {port} 的不是本安装的服务器。",
    },
    "service.say_foreign": {
        "en": "This install's server cannot answer there: {detail}.",
        "zh": "本安装的服务器无法在该端口提供服务：{detail}。",
    },
    "service.say_active_free": {
        "en": "{manager} reports the server as running, but nothing listens on port {port} yet.",
        "zh": "服务管理器（{manager}）显示服务器正在运行，但端口 {port} 上尚无程序监听。",
    },
    "service.say_stopped": {
        "en": "The server is not running ({manager}).",
        "zh": "服务器未运行（{manager}）。",
    },
    "service.say_unregistered": {
        "en": "No service is registered ({manager}) and the server is not running.",
        "zh": "尚未登记服务（{manager}），服务器也未运行。",
    },
    "service.say_outside": {
        "en": "This install's server runs (PID {pid}), started outside {manager}.",
        "zh": "本安装的服务器正在运行（进程 {pid}），但不是通过服务管理器（{manager}）启动的。",
    },
    "service.say_boot_on": {"en": "It starts by itself at boot or logon.", "zh": "它会在开机或登录时自动启动。"},
    "service.say_boot_off": {"en": "It does not start by itself at boot.", "zh": "它不会在开机时自动启动。"},
    "service.say_start": {
        "en": "Start it with 'qwenkit service start'.",
        "zh": "请运行 'qwenkit service start' 启动它。",
    },
}
