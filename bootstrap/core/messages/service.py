"""Messages of the register stage: ``qwenkit service install|start|stop|status|uninstall``."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "service.no_manager": {
        "en": "No service manager here (container, WSL without systemd, Wine): the server is started with {script} "
              "instead, under qwenkit's supervisor (restarted if it crashes or stalls); it does not start at boot.",
        "zh": "此处没有服务管理器（容器、未启用 systemd 的 WSL 或 Wine）：改用 {script} 启动服务器，"
              "由 qwenkit 的监护进程看护（崩溃或卡死时自动重启）；它不会开机自启。",
    },
    "service.not_run_fallback": {
        "en": "{manager} registered the server but never ran it: its registration is removed, and {script} runs the "
              "server under qwenkit's supervisor instead (restarted if it crashes or stalls; no start at boot).",
        "zh": "{manager} 登记了服务器却从未运行它：已删除该登记，改由 {script} 在 qwenkit 的监护进程下运行服务器"
              "（崩溃或卡死时自动重启；不会开机自启）。",
    },
    "service.rewritten": {
        "en": "{files}: not what this install renders (changed since by hand or by another program); written again "
              "from the install record before the server starts",
        "zh": "{files}：与本次安装生成的内容不一致（之后被手动或其他程序修改过）；已在启动服务器前按安装记录重新写入",
    },
    "service.task_scheduler_empty": {
        "en": "Task Scheduler lists no tasks at all (a stand-in such as Wine's schtasks, not Windows' own).",
        "zh": "任务计划程序一个任务也列不出（是 Wine 等的替身，而非 Windows 自带的）。",
    },
    "service.installed": {
        "en": "Service installed ({manager}): {path}",
        "zh": "服务已安装（{manager}）：{path}",
    },
    "service.stopped": {
        "en": "Server stopped ({manager}).",
        "zh": "服务器已停止（{manager}）。",
    },
    "service.was_stopped": {
        "en": "The server was not running ({manager}): nothing to stop.",
        "zh": "服务器本来就没有运行（{manager}）：无需停止。",
    },
    "status.service_runs": {
        "en": "runs under {manager}; {boot}",
        "zh": "运行方式：{manager}；{boot}",
    },
    "status.service_stopped": {
        "en": "not running ({manager}); {boot}",
        "zh": "未运行（{manager}）；{boot}",
    },
    "status.boot_on": {"en": "starts by itself at boot or logon", "zh": "开机或登录时自动启动"},
    "status.boot_off": {"en": "does not start by itself at boot", "zh": "不会开机自启"},
    "service.uninstalled": {
        "en": "Service removed ({manager}).",
        "zh": "服务已移除（{manager}）。",
    },
    "health.down_refused": {"en": "connection refused: nothing listens there", "zh": "连接被拒绝：该地址无程序监听"},
    "health.down_silent": {"en": "no answer within {seconds} s", "zh": "{seconds} 秒内无响应"},
    "service.detail_pid": {"en": "pid {pid}", "zh": "进程 {pid}"},
    "service.detail_pid_health": {"en": "pid {pid}, /health {health}", "zh": "进程 {pid}，/health {health}"},
    "service.detail_not_running": {"en": "not running", "zh": "未运行"},
    # A manager's name as shown where it has a Chinese one (the others keep their own names): the script is not a
    # service.
    "service.manager_script": {"en": "script", "zh": "启动脚本"},
    "service.manager_task-scheduler": {"en": "task-scheduler", "zh": "任务计划程序"},
    "service.err_refused": {
        "en": "{manager} refused '{command}' (exit {rc}): {detail}",
        "zh": "{manager} 拒绝执行 '{command}'（退出码 {rc}）：{detail}",
    },
    "service.hint_refused": {
        "en": "Run 'qwenkit service status' for details, or start the server with {script}.",
        "zh": "运行 'qwenkit service status' 查看详情，或直接用 {script} 启动服务器。",
    },
    "service.warn_linger": {
        "en": "loginctl enable-linger {user} was refused ({detail}): the server starts when {user} logs in, "
              "not at boot.",
        "zh": "loginctl enable-linger {user} 被拒绝（{detail}）：服务器将在 {user} 登录时启动，而不是开机时。",
    },
    "service.err_winsw_missing": {
        "en": "A Windows service needs WinSW, which was not found ({path}).",
        "zh": "安装 Windows 服务需要 WinSW，但未找到（{path}）。",
    },
    "service.hint_winsw_missing": {
        "en": "WinSW ships in the offline bundles; without admin rights the server is registered with Task "
              "Scheduler instead.",
        "zh": "WinSW 随离线安装包提供；没有管理员权限时，服务器改为通过任务计划程序注册。",
    },
    "service.err_nothing_installed": {
        "en": "Nothing is installed in {home}.",
        "zh": "{home} 中尚未安装任何内容。",
    },
    "service.hint_install": {
        "en": "Run 'qwenkit install' first.",
        "zh": "请先运行 'qwenkit install'。",
    },
    "service.err_no_script": {
        "en": "The start script {path} is missing.",
        "zh": "启动脚本 {path} 不存在。",
    },
    "service.err_port_busy": {
        "en": "Port {port} on {host} is already in use by another program.",
        "zh": "{host} 上的端口 {port} 已被其他程序占用。",
    },
    "service.hint_port_busy": {
        "en": "Stop that program (an older llama-server?) or reinstall with another --port.",
        "zh": "请停止该程序（可能是旧的 llama-server），或使用其他 --port 重新安装。",
    },
    "service.err_spawn": {
        "en": "Cannot start {path}: {detail}",
        "zh": "无法启动 {path}：{detail}",
    },
    "service.err_not_stopped": {
        "en": "The server (pid {pid}) did not stop.",
        "zh": "服务器（pid {pid}）未能停止。",
    },
    "service.warn_foreign_pid": {
        "en": "The recorded pid {pid} is no longer llama-server; it was left alone.",
        "zh": "记录的 pid {pid} 已不是 llama-server，未对其进行任何操作。",
    },
}
