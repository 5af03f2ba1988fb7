"""Messages of ``qwenkit install`` (the installer) and of the rerun check (``fresh.*``)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "install.hashing": {
        "en": "Checking {path} (SHA-256) ...",
        "zh": "正在校验 {path}（SHA-256）……",
    },
    "install.change": {
        "en": "To update: {reason}",
        "zh": "需要更新：{reason}",
    },
    "install.recovering": {
        "en": "An earlier upgrade was interrupted; putting the previous files back first.",
        "zh": "上次升级被中断；先恢复原有文件。",
    },
    "install.up_to_date": {
        "en": "Up to date: {model} {quant} is serving at {url}",
        "zh": "已是最新：{model} {quant} 正在 {url} 提供服务",
    },
    "install.restarting_rewritten": {
        "en": "Nothing else to update; starting the server again with those files ...",
        "zh": "其他无需更新；正在用这些文件重新启动服务器……",
    },
    "install.starting": {
        "en": "Nothing to update, but the server is not answering ({state}); starting it ...",
        "zh": "无需更新，但服务没有响应（{state}）；正在启动……",
    },
    "install.hint_start_failed": {
        "en": "See the log in the install folder's logs/; 'qwenkit install --verify' checks every file again.",
        "zh": "请查看安装目录 logs/ 下的日志；'qwenkit install --verify' 会重新校验所有文件。",
    },
    "install.proposal_title": {
        "en": "Plan: {title} {quant} on {where}",
        "zh": "方案：{title} {quant}，运行于 {where}",
    },
    "install.proposal_title_cpu": {
        "en": "Plan: {title} {quant} on the CPU",
        "zh": "方案：{title} {quant}，运行于处理器（CPU）",
    },
    "install.proposal_previous": {
        "en": "  installed now  {model} {quant} (keeps serving until the new one is verified)",
        "zh": "  当前安装      {model} {quant}（新安装验证通过前继续提供服务）",
    },
    "install.proposal_download": {
        "en": "  download       {size} in all",
        "zh": "  下载          共 {size}",
    },
    "install.proposal_download_least": {
        "en": "  download       at least {size} (the engine's size is known when it is downloaded)",
        "zh": "  下载          至少 {size}（引擎大小在下载时才知道）",
    },
    "install.proposal_download_none": {
        "en": "  download       nothing: every part is already here",
        "zh": "  下载          无：所有部分都已就绪",
    },
    "install.part_model": {"en": "model", "zh": "模型"},
    "install.part_mmproj": {"en": "vision projector", "zh": "视觉投影器"},
    "install.part_engine": {"en": "engine", "zh": "引擎"},
    "install.part_venv": {"en": "runtime venv", "zh": "Python 环境（venv）"},
    "install.part_about": {"en": "about {size}", "zh": "约 {size}"},
    "install.part_estimate": {
        "en": "about {size} (recorded size of its wheels)",
        "zh": "约 {size}（按记录的依赖包大小估算）",
    },
    "install.part_unknown": {
        "en": "size stated by the release when downloaded",
        "zh": "大小在下载时由发布页给出",
    },
    "install.part_here": {"en": "already here", "zh": "已在本机"},
    "install.part_local": {"en": "your own file, used where it is", "zh": "使用你指定的本地文件，不下载"},
    "install.part_no_wheels": {"en": "not made (the bundle has no wheels for this machine)",
                               "zh": "不创建（离线安装包中没有本机可用的依赖包）"},
    "install.part_skipped": {"en": "not made (--no-venv)", "zh": "不创建（--no-venv）"},
    "install.part_no_python": {"en": "not made (no Python 3.10-3.13 here; the server does not need it)",
                               "zh": "不创建（本机没有 Python 3.10-3.13；服务器不需要它）"},
    "install.proposal_memory": {
        "en": "  memory         GPU {gpu} of {gpu_budget} GiB, RAM {ram} of {ram_budget} GiB",
        "zh": "  内存          显存 {gpu} / {gpu_budget} GiB，内存 {ram} / {ram_budget} GiB",
    },
    "install.proposal_memory_cpu": {
        "en": "  memory         RAM {ram} of {ram_budget} GiB; no GPU used",
        "zh": "  内存          内存 {ram} / {ram_budget} GiB；不使用 GPU",
    },
    "install.proposal_memory_unified": {
        "en": "  memory         {total} of {budget} GiB of unified memory (shared by CPU and GPU)",
        "zh": "  内存          统一内存 {total} / {budget} GiB（CPU 与 GPU 共用）",
    },
    "install.proposal_cache": {
        "en": "                 of which {mib} MiB for the prompt cache and checkpoints, filled as the server answers",
        "zh": "                其中 {mib} MiB 为提示缓存和上下文检查点，随服务器应答逐渐占满",
    },
    "install.proposal_context": {
        "en": "  context        {ctx} tokens",
        "zh": "  上下文        {ctx} token",
    },
    "install.proposal_port": {
        "en": "  port           {port}",
        "zh": "  端口          {port}",
    },
    "install.proposal_port_moved": {
        "en": "  port           {port} ({asked} is taken by another program)",
        "zh": "  端口          {port}（{asked} 已被其他程序占用）",
    },
    "install.proposal_runs": {
        "en": "  runs as        {how}",
        "zh": "  运行方式      {how}",
    },
    "install.runs_script": {
        "en": "the start script {script} only (no service: start it yourself)",
        "zh": "仅启动脚本 {script}（不注册服务：需自行启动）",
    },
    "install.runs_systemd-user": {
        "en": "a service: systemd user unit (starts at login)",
        "zh": "服务：systemd 用户单元（登录时启动）",
    },
    "install.runs_systemd-system": {
        "en": "a service: systemd system unit (starts at boot)",
        "zh": "服务：systemd 系统单元（开机时启动）",
    },
    "install.runs_launchd": {
        "en": "a service: launchd agent (starts at login)",
        "zh": "服务：launchd 代理（登录时启动）",
    },
    "install.runs_task-scheduler": {
        "en": "a service: Task Scheduler task (starts at logon)",
        "zh": "服务：任务计划程序任务（登录时启动）",
    },
    "install.runs_winsw": {
        "en": "a service: Windows service via WinSW (starts at boot)",
        "zh": "服务：通过 WinSW 注册的 Windows 服务（开机时启动）",
    },
    "install.proposal_thinking_on": {
        "en": "  thinking       on by default (change: 'qwenkit install --thinking off')",
        "zh": "  思考模式      默认开启（更改：'qwenkit install --thinking off'）",
    },
    "install.proposal_thinking_off": {
        "en": "  thinking       off by default (change: 'qwenkit install --thinking on')",
        "zh": "  思考模式      默认关闭（更改：'qwenkit install --thinking on'）",
    },
    "install.proposal_home": {
        "en": "  install into   {home}",
        "zh": "  安装到        {home}",
    },
    "install.question": {
        "en": "Continue? [Y/n]",
        "zh": "继续吗？[Y/n]",
    },
    "install.cancelled": {
        "en": "Cancelled; nothing was changed.",
        "zh": "已取消；没有做任何更改。",
    },
    "install.done_installed": {
        "en": "Installed in {home}. Rerun '{command} install' any time to upgrade.",
        "zh": "已安装到 {home}。以后随时重新运行 '{command} install' 即可升级。",
    },
    "install.done_upgraded": {
        "en": "Upgraded in place in {home}; the old files were removed.",
        "zh": "已在 {home} 中就地升级；旧文件已删除。",
    },
    "install.done_upgraded_nothing_removed": {
        "en": "Upgraded in place in {home}; no old file needed removing.",
        "zh": "已在 {home} 中就地升级；没有需要删除的旧文件。",
    },
    "install.done_switched": {
        "en": "{model} is the default model in {home} now; {old} stays installed beside it (nothing was removed: "
              "switching back downloads nothing).",
        "zh": "{model} 现在是 {home} 的默认模型；{old} 仍安装在旁边（未删除任何文件：切换回去无需下载）。",
    },
    "install.done_relaunched": {
        "en": "Restarted with the new settings in {home}; nothing was downloaded or removed.",
        "zh": "已在 {home} 中按新设置重新启动；没有下载或删除任何文件。",
    },
    "install.done_verified": {
        "en": "Every file checked and the server verified again in {home}; nothing needed an update.",
        "zh": "已重新校验 {home} 中的所有文件并再次验证服务；无需更新。",
    },
    "install.err_no_tty": {
        "en": "there is no terminal to confirm the install in",
        "zh": "没有可用于确认安装的终端",
    },
    "install.hint_no_tty": {
        "en": "Add --yes (or --answers FILE) to install without a prompt.",
        "zh": "请加上 --yes（或 --answers 文件）以免确认直接安装。",
    },
    "install.err_answers_read": {
        "en": "cannot read the answers file {path}: {detail}",
        "zh": "无法读取应答文件 {path}：{detail}",
    },
    "install.err_answers_key": {
        "en": "the answers file {path} has an unknown option '{option}' (known: {known})",
        "zh": "应答文件 {path} 含有未知选项 '{option}'（可用：{known}）",
    },
    "install.err_answers_type": {
        "en": "in the answers file {path}, '{option}' must be {expected}",
        "zh": "应答文件 {path} 中的 '{option}' 必须是 {expected} 类型",
    },
    "install.err_bundle_and_source": {
        "en": "give either --bundle or --source, not both",
        "zh": "--bundle 与 --source 只能二选一",
    },
    "install.err_port": {
        "en": "port {port} is not a TCP port (1-65535)",
        "zh": "端口 {port} 不是有效的 TCP 端口（1-65535）",
    },
    "fresh.thinking_changed": {
        "en": "thinking by default changes from {old} to {new}",
        "zh": "默认思考模式由 {old} 改为 {new}",
    },
    "fresh.thinking_default": {"en": "the catalog's default", "zh": "模型目录默认值"},
    "fresh.model_changed": {
        "en": "the model changes from {old} to {new}",
        "zh": "模型由 {old} 改为 {new}",
    },
    "fresh.kit_changed": {
        "en": "QwenClientKit was updated ({old} -> {new})",
        "zh": "QwenClientKit 已更新（{old} -> {new}）",
    },
    "fresh.engine_changed": {
        "en": "the pinned llama.cpp engine is not the installed one ({old})",
        "zh": "固定的 llama.cpp 引擎版本与已安装的（{old}）不同",
    },
    "fresh.file_changed": {
        "en": "{path} is missing or changed on disk",
        "zh": "{path} 丢失或在磁盘上被改动",
    },
    "fresh.scripts_missing": {
        "en": "the start script or the API key file is missing",
        "zh": "启动脚本或 API 密钥文件丢失",
    },
    "fresh.files_changed": {
        "en": "the catalog lists other files for this model",
        "zh": "模型目录为该模型列出了不同的文件",
    },
    "fresh.revision_changed": {
        "en": "a new revision of {path}",
        "zh": "{path} 有新修订版",
    },
    "fresh.not_checked": {
        "en": "could not check for a newer revision ({reason}); keeping the installed files",
        "zh": "无法检查是否有新修订版（{reason}）；保留已安装的文件",
    },
}
