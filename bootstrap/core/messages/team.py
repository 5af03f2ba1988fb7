"""Messages of ``qwenkit team`` (the team gateway over several member installs)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "cmd.team": {
        "en": "one endpoint for a team over several installed PCs (members, users, the gateway)",
        "zh": "把多台已安装的电脑合成一个团队端点（成员、用户、网关）",
    },
    "arg.team_action": {
        "en": "add-member, remove-member, refresh, add-user, remove-user, rotate-key, users, start, stop, status, "
              "worker-start or worker-stop",
        "zh": "要执行的团队操作（各项说明见下方列表）",
    },
    "cmd.team_refresh": {
        "en": "ask every member again which models it serves, and route by what it says",
        "zh": "重新询问每台成员电脑提供哪些模型，并按其回答分发请求",
    },
    "cmd.team_rotate_key": {
        "en": "give a user a new key (shown once); the old one is refused at once",
        "zh": "为用户换一个新密钥（只显示一次）；旧密钥立即失效",
    },
    "cmd.team_users": {"en": "list the team's users (never their keys)", "zh": "列出团队用户（不显示密钥）"},
    "arg.team_user": {
        "en": "the user's name (1-64 letters or digits of any language, and . _ -)",
        "zh": "用户名（1-64 个任意语言的字母或数字，以及 . _ -）",
    },
    "arg.team_default_model": {
        "en": "the model a request without \"model\" gets (default: the one most members serve)",
        "zh": "请求未指定 \"model\" 时使用的模型（默认：最多成员提供的模型）",
    },
    "cmd.team_add_member": {
        "en": "add a member install by its URL and API key (asks it for its slots)",
        "zh": "按 URL 和 API 密钥添加一台成员电脑（向它查询并发槽位数）",
    },
    "cmd.team_remove_member": {"en": "remove a member", "zh": "移除一台成员电脑"},
    "cmd.team_add_user": {
        "en": "add a user and print their new key (shown once)",
        "zh": "添加一个用户并输出其新密钥（只显示一次）",
    },
    "cmd.team_remove_user": {"en": "remove a user (their key stops working)", "zh": "移除一个用户（其密钥随即失效）"},
    "cmd.team_start": {
        "en": "start the gateway, or apply changes to a running one",
        "zh": "启动网关，或让正在运行的网关应用更改",
    },
    "cmd.team_stop": {"en": "stop the gateway", "zh": "停止网关"},
    "cmd.team_status": {
        "en": "the gateway and each member: up or down, busy slots, model",
        "zh": "网关和每台成员电脑的状态：是否在线、忙碌槽位、模型",
    },
    "arg.team_url": {
        "en": "the member's server, e.g. http://192.168.1.20:8080",
        "zh": "成员电脑的服务器地址，例如 http://192.168.1.20:8080",
    },
    "arg.team_key_file": {
        "en": "a file holding the member's API key (its secrets/api-key), or - to read it from stdin",
        "zh": "存放该成员 API 密钥的文件（即其 secrets/api-key），或用 - 从标准输入读取",
    },
    "arg.team_name": {"en": "a short name for it (letters, digits, . _ -)", "zh": "一个简短名称（字母、数字、. _ -）"},
    "arg.team_member": {"en": "the member's name or URL", "zh": "成员名称或 URL"},
    "arg.team_slots": {
        "en": "its number of slots, when it cannot be asked now",
        "zh": "其并发槽位数（当前无法向它查询时使用）",
    },
    "arg.team_host": {
        "en": "the address the gateway listens on (default 127.0.0.1; the PC's LAN address for a team)",
        "zh": "网关监听的地址（默认 127.0.0.1；团队使用时填本机局域网地址）",
    },
    "arg.team_port": {"en": "the gateway's port (default 8090)", "zh": "网关端口（默认 8090）"},
    "arg.team_nginx": {"en": "the nginx program to run", "zh": "要运行的 nginx 程序"},
    "team.err_url": {
        "en": "{url} is not a member URL (http:// or https://, a host and a port, nothing after)",
        "zh": "{url} 不是有效的成员 URL（需为 HTTP 或 HTTPS 地址，含主机名和端口，其后不能有路径）",
    },
    "team.hint_url": {
        "en": "Give it as the member's install report shows it, e.g. http://192.168.1.20:8080.",
        "zh": "请按成员电脑安装报告中的写法填写，例如 http://192.168.1.20:8080。",
    },
    "team.err_key": {
        "en": "the key in {where} is not a usable API key (16-512 letters, digits or - . _ ~ + / =)",
        "zh": "{where} 中的密钥不是可用的 API 密钥（需为 16-512 个字母、数字或 - . _ ~ + / =）",
    },
    "team.hint_key": {
        "en": "Copy the member's <home>/secrets/api-key file to this PC and pass it with --key-file.",
        "zh": "请把成员电脑上的 <安装目录>/secrets/api-key 文件复制到本机，并用 --key-file 指定。",
    },
    "team.err_key_file": {"en": "cannot read {path}: {reason}", "zh": "无法读取 {path}：{reason}"},
    "team.err_name": {
        "en": "{name} is not a usable name (1-64 letters, digits or . _ -, starting with a letter or digit)",
        "zh": "{name} 不是可用的名称（1-64 个字母、数字或 . _ -，以字母或数字开头）",
    },
    "team.err_user_name": {
        "en": "{name} is not a usable user name (1-64 letters or digits of any language, and . _ -, starting with "
              "a letter or digit; no spaces or symbols)",
        "zh": "{name} 不是可用的用户名（1-64 个任意语言的字母或数字，以及 . _ -，以字母或数字开头；不能含空格或符号）",
    },
    "team.hint_user_name": {
        "en": "Pick a short name such as alice, li.wei or Zhang.San (letters of any language work too).",
        "zh": "请取一个简短的名称，例如 alice、li.wei 或张三。",
    },
    "team.err_slots_range": {
        "en": "{slots} slots is not a usable number (1 to {most})",
        "zh": "槽位数 {slots} 不可用（应为 1 到 {most}）",
    },
    "team.hint_slots_range": {
        "en": "Give the member's number of slots: its llama-server's -np (the install report shows it).",
        "zh": "请填写该成员的并发槽位数，即其 llama-server 的 -np（安装报告中有）。",
    },
    "team.hint_slots": {
        "en": "Pass --slots N with the member's number of slots (its llama-server's -np).",
        "zh": "请用 --slots N 指定该成员的并发槽位数（其 llama-server 的 -np）。",
    },
    "team.hint_name": {
        "en": "Pick a short name such as alice or pc-2.",
        "zh": "请取一个简短的名称，例如 alice 或 pc-2。",
    },
    "team.err_host": {"en": "{host} is not an address to listen on", "zh": "{host} 不是可监听的地址"},
    "team.err_port": {
        "en": "port {port} is not a valid TCP port (1-65535)",
        "zh": "端口 {port} 不是有效的 TCP 端口（1-65535）",
    },
    "team.err_record": {"en": "the team record {path} is damaged: {reason}", "zh": "团队记录 {path} 已损坏：{reason}"},
    "team.hint_record": {
        "en": "Restore it from a backup, or delete it and add the members and users again.",
        "zh": "请从备份恢复，或删除它后重新添加成员和用户。",
    },
    "team.err_no_member": {"en": "no member named {name}", "zh": "没有名为 {name} 的成员"},
    "team.hint_status": {"en": "'qwenkit team status' lists the team.", "zh": "运行 'qwenkit team status' 查看团队。"},
    "team.err_member_at": {
        "en": "{url} is already in the team as member {name}",
        "zh": "{url} 已是团队成员 {name}",
    },
    "team.hint_member_exists": {
        "en": "To add it again, remove it first: 'qwenkit team remove-member {name}'; 'qwenkit team refresh' asks "
              "it again what it serves.",
        "zh": "要重新添加，请先移除：'qwenkit team remove-member {name}'；"
              "'qwenkit team refresh' 会重新询问它提供的模型。",
    },
    "team.err_member_name": {
        "en": "the team already has a member named {name}",
        "zh": "团队中已有名为 {name} 的成员",
    },
    "team.hint_member_name": {
        "en": "Give this one another name with --name.",
        "zh": "请用 --name 为这台电脑另取一个名称。",
    },
    "team.err_member_is_gateway": {
        "en": "{url} is a team gateway, not a member install",
        "zh": "{url} 是团队网关，不是成员电脑上的安装",
    },
    "team.hint_member_is_gateway": {
        "en": "Add the PCs that serve the models, each with its own key (its <home>/secrets/api-key), not a user "
              "key of a team.",
        "zh": "请添加提供模型的电脑，并使用各自的密钥（其安装目录中的 secrets/api-key），而不是团队用户的密钥。",
    },
    "team.err_member_key": {"en": "{url} refuses this key", "zh": "{url} 拒绝了这个密钥"},
    "team.hint_member_key": {
        "en": "Use that PC's own key: the file <home>/secrets/api-key of its install.",
        "zh": "请使用那台电脑自己的密钥：其安装目录中的 secrets/api-key 文件。",
    },
    "team.err_member_down": {"en": "{url} is {state} ({detail})", "zh": "{url} 当前{state}（{detail}）"},
    "team.hint_member_down": {
        "en": "Start its server ('qwenkit service start' on that PC) and check the address, or pass --slots N to "
              "add it anyway.",
        "zh": "请在那台电脑上启动服务器（'qwenkit service start'）并核对地址，或加上 --slots N 仍然添加。",
    },
    "team.err_slots": {"en": "the member's slot count is unknown", "zh": "不知道该成员的并发槽位数"},
    "team.err_user_exists": {"en": "the team already has a user named {name}", "zh": "团队中已有名为 {name} 的用户"},
    "team.hint_user_exists": {
        "en": "To give {name} a new key: 'qwenkit team rotate-key {name}'.",
        "zh": "要给 {name} 换新密钥：运行 'qwenkit team rotate-key {name}'。",
    },
    "team.err_no_user": {"en": "no user named {name}", "zh": "没有名为 {name} 的用户"},
    "team.hint_users": {"en": "'qwenkit team users' lists them.", "zh": "运行 'qwenkit team users' 查看用户列表。"},
    "team.err_no_members": {"en": "the team has no member yet", "zh": "团队中还没有成员"},
    "team.hint_no_members": {
        "en": "Add one: 'qwenkit team add-member http://192.168.1.21:8080 --key-file its-api-key'.",
        "zh": "请先添加：'qwenkit team add-member http://192.168.1.21:8080 --key-file 其密钥文件'。",
    },
    "team.err_no_users": {"en": "the team has no user yet", "zh": "团队中还没有用户"},
    "team.hint_no_users": {
        "en": "Add one: qwenkit team add-user alice (it prints alice's key).",
        "zh": "请先添加：qwenkit team add-user alice（会输出 alice 的密钥）。",
    },
    "team.err_no_nginx": {"en": "nginx is not installed here ({path})", "zh": "此处未安装 nginx（{path}）"},
    "team.err_no_njs": {
        "en": "the members serve different models, and {nginx} has no njs module to route each request to a member "
              "that serves its model",
        "zh": "各成员提供的模型不同，而 {nginx} 缺少 njs 模块，无法把每个请求发给提供该模型的成员",
    },
    "team.hint_no_njs": {
        "en": "Install it (Debian/Ubuntu: apt install libnginx-mod-http-js), then run the command again.",
        "zh": "请先安装（Debian/Ubuntu：apt install libnginx-mod-http-js），然后重新运行该命令。",
    },
    "team.err_reload": {
        "en": "the gateway did not take its new settings within {seconds} s",
        "zh": "网关在 {seconds} 秒内未应用新设置",
    },
    "team.hint_no_nginx": {
        "en": "Install it (Debian/Ubuntu: apt install nginx; macOS: brew install nginx), or pass --nginx PATH.",
        "zh": "请先安装（Debian/Ubuntu：apt install nginx；macOS：brew install nginx），或用 --nginx 指定路径。",
    },
    "team.err_config": {
        "en": "nginx refuses the gateway's configuration: {detail}",
        "zh": "nginx 不接受网关配置：{detail}",
    },
    "team.hint_config": {
        "en": "The port may be taken or the address not this PC's: try another --port or --host.",
        "zh": "端口可能已被占用，或地址不属于本机：请换一个 --port 或 --host。",
    },
    "team.err_start": {"en": "the gateway did not start: {detail}", "zh": "网关未能启动：{detail}"},
    "team.hint_start": {"en": "What nginx said is in {log}.", "zh": "nginx 的说明见 {log}。"},
    "team.added_member": {
        "en": "added member {name} ({url}): {slots} slots in all",
        "zh": "已添加成员 {name}（{url}）：共 {slots} 个槽位",
    },
    "team.serves": {
        "en": "  serves {model}{aliases}: {slots} slots",
        "zh": "  提供 {model}{aliases}：{slots} 个槽位",
    },
    "team.aliases": {"en": " (also called {names})", "zh": "（别名 {names}）"},
    "team.serves_unknown": {
        "en": "  its models are not known yet (it did not answer): 'qwenkit team refresh' asks it again once it is up; "
              "until then it gets no requests",
        "zh": "  尚不知道它提供哪些模型（它没有应答）：它上线后运行 'qwenkit team refresh' 重新询问；"
              "在此之前不会分给它请求",
    },
    "team.member_line": {"en": "member {name} ({url}):", "zh": "成员 {name}（{url}）："},
    "team.refresh_kept": {
        "en": "member {name} is {state}: the gateway keeps routing to it what it served when last asked",
        "zh": "成员 {name} 当前{state}：网关仍按上次询问时它提供的模型分发请求",
    },
    "team.rotated_key": {
        "en": "gave {name} a new key (above, shown only now); the old key no longer works",
        "zh": "已为 {name} 换了新密钥（见上方，只显示这一次）；旧密钥已失效",
    },
    "team.removed_member": {"en": "removed member {name}", "zh": "已移除成员 {name}"},
    "team.added_user": {
        "en": "added user {name}; the key above is shown only now: give it to them",
        "zh": "已添加用户 {name}；上面的密钥只显示这一次，请交给对方",
    },
    "team.removed_user": {"en": "removed user {name}", "zh": "已移除用户 {name}"},
    "team.saved": {
        "en": "saved; 'qwenkit team start' starts the gateway",
        "zh": "已保存；运行 'qwenkit team start' 启动网关",
    },
    "team.reloaded": {"en": "the running gateway uses it now", "zh": "正在运行的网关已应用更改"},
    "team.refuses_everyone": {
        "en": "no user is left: the running gateway now refuses every request (401); 'qwenkit team add-user NAME' "
              "lets someone in again",
        "zh": "已没有任何用户：正在运行的网关现在拒绝所有请求（401）；运行 'qwenkit team add-user 名称' 可重新放行",
    },
    "team.serves_nobody": {
        "en": "no member is left: the running gateway now answers every request with 503; 'qwenkit team "
              "add-member' adds one",
        "zh": "已没有任何成员：正在运行的网关现在对所有请求返回 503；运行 'qwenkit team add-member' 添加成员",
    },
    "team.err_default_model": {
        "en": "no member serves {model} (served: {served})",
        "zh": "没有成员提供 {model}（可用的有：{served}）",
    },
    "team.hint_default_model": {
        "en": "Name one of the served models with --default-model, or leave it out.",
        "zh": "请用 --default-model 指定已提供的某个模型，或不加此参数。",
    },
    "team.default_model": {
        "en": "requests that name no model go to {model}",
        "zh": "未指定模型的请求发往 {model}",
    },
    "team.all_interfaces": {
        "en": "the gateway listens on every network of this PC (0.0.0.0); anyone who reaches it still needs a key",
        "zh": "网关在本机所有网络上监听（0.0.0.0）；能访问到它的人仍需密钥",
    },
    "team.endpoint": {"en": "Team endpoint: {url}", "zh": "团队端点：{url}"},
    "team.started": {
        "en": "gateway running (pid {pid}); members: {members}, users: {users}; each request is logged in {log}",
        "zh": "网关正在运行（进程 {pid}）；成员：{members} 个，用户：{users} 个；每个请求记录在 {log}",
    },
    "team.stopped": {"en": "gateway stopped", "zh": "网关已停止"},
    "team.not_running": {"en": "the gateway was not running", "zh": "网关本来就未运行"},
    "team.member_not_ready": {
        "en": "member {name} ({url}) is {state}: requests go to the others",
        "zh": "成员 {name}（{url}）当前{state}：请求会发往其他成员",
    },
    "team.status_running": {
        "en": "Gateway: running (pid {pid}) at {url}",
        "zh": "网关：正在运行（进程 {pid}），地址 {url}",
    },
    "team.status_stopped": {"en": "Gateway: not running", "zh": "网关：未运行"},
    "team.status_default": {
        "en": "Requests that name no model: {model}",
        "zh": "未指定模型的请求：{model}",
    },
    "team.status_member": {
        "en": "  {name}  {url}  {state}  busy/slots {slots}",
        "zh": "  {name}  {url}  {state}  忙碌/槽位 {slots}",
    },
    "team.status_model": {
        "en": "      {model}  busy/slots {slots}  {loaded}",
        "zh": "      {model}  忙碌/槽位 {slots}  {loaded}",
    },
    "team.model_loaded": {"en": "loaded", "zh": "已加载"},
    "team.model_loading": {"en": "loading", "zh": "正在加载"},
    "team.model_unloaded": {"en": "not loaded (loads on its first request)", "zh": "未加载（首个请求时加载）"},
    "team.model_sleeping": {"en": "asleep (wakes on its next request)", "zh": "休眠中（下个请求时唤醒）"},
    "team.model_downloading": {"en": "downloading", "zh": "正在下载"},
    "team.model_downloaded": {"en": "downloaded, not loaded", "zh": "已下载，未加载"},
    "team.model_failed": {"en": "failed to load", "zh": "加载失败"},
    "team.model_unknown": {"en": "state unknown", "zh": "状态未知"},
    "team.member_drift": {
        "en": "member {name} now serves other models than the gateway routes to it: 'qwenkit team refresh'",
        "zh": "成员 {name} 现在提供的模型与网关记录的不同：请运行 'qwenkit team refresh'",
    },
    "team.state_ready": {"en": "ready", "zh": "就绪"},
    "team.state_loading": {"en": "loading its model", "zh": "正在加载模型"},
    "team.state_down": {"en": "down", "zh": "无法连接"},
    "team.state_key_refused": {"en": "refusing the key", "zh": "拒绝密钥"},
    "team.state_not_llama_server": {"en": "not a llama-server", "zh": "不是 llama-server"},
    "team.state_gateway": {"en": "a team gateway", "zh": "是团队网关"},
    "team.uninstall_found": {
        "en": "This PC's team room goes too: {what}; {folder} is deleted with the members' and users' keys.",
        "zh": "本机的团队部分也会一并移除：{what}；{folder} 连同成员和用户的密钥一起删除。",
    },
    "team.uninstall_gateway": {"en": "the team gateway (pid {pid}) is stopped", "zh": "停止团队网关（进程 {pid}）"},
    "team.uninstall_worker": {"en": "the RPC worker (pid {pid}) is stopped", "zh": "停止 RPC 工作节点（进程 {pid}）"},
    "team.uninstall_idle": {"en": "nothing of it runs", "zh": "其中没有正在运行的程序"},
    "team.uninstall_done": {
        "en": "Removed the team room: {what}; deleted {folder}.",
        "zh": "已移除团队部分：{what}；已删除 {folder}。",
    },
    "team.uninstall_stopped_gateway": {"en": "stopped the gateway (pid {pid})", "zh": "已停止网关（进程 {pid}）"},
    "team.uninstall_stopped_worker": {
        "en": "stopped the RPC worker (pid {pid})",
        "zh": "已停止 RPC 工作节点（进程 {pid}）",
    },
    "team.uninstall_unit": {"en": "removed its service unit", "zh": "已移除其服务单元"},
    "team.uninstall_nothing_ran": {"en": "nothing of it was running", "zh": "其中没有正在运行的程序"},
    "team.err_teardown_running": {
        "en": "the team gateway or RPC worker still runs (pid {pids}) after being stopped",
        "zh": "团队网关或 RPC 工作节点在停止后仍在运行（进程 {pids}）",
    },
    "team.err_teardown_files": {"en": "cannot delete {path}: {reason}", "zh": "无法删除 {path}：{reason}"},
    "team.hint_teardown": {
        "en": "Stop it yourself (kill PID as its owner), then run the uninstall again; the team's files are kept "
              "until then.",
        "zh": "请以其所属用户身份运行 'kill 进程号' 停止它，然后再次运行卸载；在此之前团队文件会保留。",
    },
    "team.err_unit": {
        "en": "systemd refused 'systemctl --user {command}' for the gateway: {detail}",
        "zh": "systemd 拒绝了网关的 'systemctl --user {command}'：{detail}",
    },
    "team.hint_unit": {
        "en": "'journalctl --user -u qwenclientkit-team' shows why; 'qwenkit team status' shows the gateway.",
        "zh": "运行 'journalctl --user -u qwenclientkit-team' 查看原因；'qwenkit team status' 显示网关状态。",
    },
    "team.no_service": {
        "en": "no service manager runs here: the gateway runs until this PC restarts ('qwenkit team start' then)",
        "zh": "此处没有运行服务管理器：网关会一直运行到本机重启（重启后请运行 'qwenkit team start'）",
    },
    "cmd.team_worker_start": {
        "en": "lend this PC to a head as a llama.cpp RPC worker (private address only; read the warning)",
        "zh": "把本机作为 llama.cpp RPC 工作节点借给主节点使用（仅限私有地址；请先阅读警告）",
    },
    "cmd.team_worker_stop": {"en": "stop this PC's RPC worker", "zh": "停止本机的 RPC 工作节点"},
    "arg.rpc_host": {
        "en": "the private address the head reaches this PC on (never 0.0.0.0)",
        "zh": "主节点访问本机所用的私有地址（绝不能是 0.0.0.0）",
    },
    "arg.rpc_port": {"en": "the worker's port (default 50052)", "zh": "工作节点端口（默认 50052）"},
    "arg.rpc_accept": {
        "en": "I know the RPC protocol has no authentication and no encryption",
        "zh": "我已知晓 RPC 协议既无身份验证也不加密",
    },
    "rpc.err_not_ip": {"en": "{host} is not an IP address", "zh": "{host} 不是 IP 地址"},
    "rpc.err_wildcard": {
        "en": "an RPC worker never listens on every network ({host})",
        "zh": "RPC 工作节点绝不在所有网络上监听（{host}）",
    },
    "rpc.err_public": {
        "en": "{host} is not a private address: an RPC worker there could be reached from outside",
        "zh": "{host} 不是私有地址：在此监听的 RPC 工作节点可能被外部访问",
    },
    "rpc.hint_address": {
        "en": "Give this PC's LAN address (10.x, 172.16-31.x, 192.168.x, or a VPN's 100.64-127.x), or 127.0.0.1 "
              "with an SSH tunnel from the head.",
        "zh": "请填写本机的局域网地址（10.x、172.16-31.x、192.168.x 或 VPN 的 100.64-127.x），或 127.0.0.1 并由主节点"
              "通过 SSH 隧道连接。",
    },
    "rpc.err_opt_in": {
        "en": "an RPC worker runs whatever its head sends it, unauthenticated and unencrypted",
        "zh": "RPC 工作节点会执行主节点发来的任何内容，既无身份验证也不加密",
    },
    "rpc.hint_opt_in": {
        "en": "Only on a network where you trust every device: rerun with --accept-rpc-risk (docs/team-endpoint.md).",
        "zh": "仅在信任网络中每台设备时使用：加上 --accept-rpc-risk 重新运行（见 docs/team-endpoint.md）。",
    },
    "rpc.warning": {
        "en": "llama.cpp: \"Never run the RPC server on an open network or in a sensitive environment!\" Anyone who "
              "reaches this port can run code as this user; firewall it to the head's address.",
        "zh": "llama.cpp 官方提示：切勿在开放网络或敏感环境中运行 RPC 服务器！任何能访问此端口的人都能以当前用户身份"
              "执行代码；请用防火墙只允许主节点的地址访问。",
    },
    "rpc.err_not_installed": {"en": "nothing is installed in {home}", "zh": "{home} 中尚未安装任何内容"},
    "rpc.hint_not_installed": {
        "en": "Install this PC from the team's bundle first: qwenkit install --bundle DIR.",
        "zh": "请先用团队的离线安装包安装本机：qwenkit install --bundle 目录。",
    },
    "rpc.err_no_worker": {
        "en": "the installed engine ({engine}) has no ggml-rpc-server",
        "zh": "已安装的引擎（{engine}）没有 ggml-rpc-server",
    },
    "rpc.hint_no_worker": {
        "en": "Install an engine build with llama.cpp's RPC backend (upstream's release archives carry it).",
        "zh": "请安装带有 llama.cpp RPC 后端的引擎构建（官方发布包中包含）。",
    },
    "rpc.err_running": {
        "en": "this PC's RPC worker already runs (pid {pid})",
        "zh": "本机的 RPC 工作节点已在运行（pid {pid}）",
    },
    "rpc.hint_running": {
        "en": "'qwenkit team worker-stop' stops it.",
        "zh": "运行 'qwenkit team worker-stop' 可停止它。",
    },
    "rpc.err_start": {"en": "the RPC worker did not start: {detail}", "zh": "RPC 工作节点未能启动：{detail}"},
    "rpc.hint_start": {"en": "Its log is {log}.", "zh": "日志见 {log}。"},
    "rpc.started": {
        "en": "RPC worker running (pid {pid}) at {host}:{port}; on the head: qwenkit install --rpc {host}:{port}",
        "zh": "RPC 工作节点正在运行（pid {pid}），地址 {host}:{port}；"
              "在主节点上运行：qwenkit install --rpc {host}:{port}",
    },
    "rpc.stopped": {"en": "RPC worker stopped", "zh": "RPC 工作节点已停止"},
    "rpc.not_running": {"en": "no RPC worker was running", "zh": "RPC 工作节点本来就未运行"},
    "rpc.status_running": {"en": "RPC worker: running (pid {pid})", "zh": "RPC 工作节点：正在运行（pid {pid}）"},
    # The head: install --rpc (core/private_address.py, place/rpc_probe.py, plan/planner.py, install/status.py)
    "arg.install_rpc": {
        "en": "IP:PORT[,IP:PORT...]: RPC workers ('qwenkit team worker-start' on each) whose memory this PC uses for "
              "a model it cannot hold alone; 'none' drops them",
        "zh": "IP:端口[,IP:端口……]：RPC 工作节点的地址（各自先启动工作节点），本机借用其内存运行单机放不下的模型；"
              "写 'none' 表示不再使用",
    },
    "rpc.fresh_changed": {"en": "RPC workers change from {old} to {new}", "zh": "RPC 工作节点由 {old} 改为 {new}"},
    "rpc.err_endpoint": {"en": "{endpoint} is not IP:PORT", "zh": "{endpoint} 不是 IP:端口 的形式"},
    "rpc.hint_endpoint": {
        "en": "Name each worker as its IPv4 address and port, comma-separated, as 'qwenkit team worker-start' printed "
              "it (for example --rpc 192.168.1.20:50052); --rpc none drops them.",
        "zh": "请用 IPv4 地址和端口指定每个工作节点，以逗号分隔，与 'qwenkit team worker-start' 输出的一致"
              "（例如 --rpc 192.168.1.20:50052）；--rpc none 表示不再使用。",
    },
    "rpc.err_too_many": {
        "en": "{count} RPC workers named; the kit uses at most {most}",
        "zh": "指定了 {count} 个 RPC 工作节点；最多可用 {most} 个",
    },
    "rpc.err_head_not_installed": {
        "en": "an RPC head needs this PC's own install first ({home} has none)",
        "zh": "RPC 主节点需要本机先完成安装（{home} 中尚未安装）",
    },
    "rpc.hint_head_not_installed": {
        "en": "Install without --rpc first, then rerun with --rpc IP:PORT.",
        "zh": "请先不带 --rpc 完成安装，再加上 --rpc IP:端口 重新运行。",
    },
    "rpc.err_unreachable": {
        "en": "the RPC worker {endpoint} does not answer",
        "zh": "RPC 工作节点 {endpoint} 没有响应",
    },
    "rpc.hint_unreachable": {
        "en": "On that PC run 'qwenkit team worker-start --host ITS-IP --accept-rpc-risk', and let this PC reach "
              "its port {port} through the firewall; then rerun.",
        "zh": "请在那台电脑上运行 'qwenkit team worker-start --host 它的IP --accept-rpc-risk'，并让防火墙允许本机访问"
              "其端口 {port}，然后重新运行。",
    },
    "rpc.err_busy": {
        "en": "the RPC worker {endpoint} took the connection but did not answer in {seconds} s",
        "zh": "RPC 工作节点 {endpoint} 接受了连接，但 {seconds} 秒内没有应答",
    },
    "rpc.hint_busy": {
        "en": "A worker serves one head at a time: stop the server using it (here: 'qwenkit service stop'), then "
              "rerun.",
        "zh": "一个工作节点同一时间只服务一个主节点：请先停止正在使用它的服务器（本机：'qwenkit service stop'），"
              "然后重新运行。",
    },
    "rpc.err_version": {
        "en": "the RPC worker {endpoint} failed the handshake{version}: it runs another llama.cpp build",
        "zh": "RPC 工作节点 {endpoint} 握手失败{version}：它运行的是另一个 llama.cpp 构建",
    },
    "rpc.protocol": {"en": " (it speaks RPC protocol {version})", "zh": "（其 RPC 协议版本为 {version}）"},
    "rpc.hint_version": {
        "en": "Head and workers must run the same engine build: install both from the same bundle, then restart "
              "the worker ('qwenkit team worker-stop', then worker-start).",
        "zh": "主节点和工作节点必须运行同一个引擎构建：请用同一个离线安装包安装两者，然后重启工作节点"
              "（'qwenkit team worker-stop'，再 worker-start）。",
    },
    "rpc.err_engine_no_rpc": {
        "en": "the engine {server} was built without llama.cpp's RPC backend",
        "zh": "引擎 {server} 构建时未包含 llama.cpp 的 RPC 后端",
    },
    "rpc.workers_held": {
        "en": "RPC worker {endpoint} serves this PC's running server: its memory as recorded at the last install",
        "zh": "RPC 工作节点 {endpoint} 正在为本机运行中的服务器工作：其内存按上次安装时的记录计算",
    },
    "rpc.workers_seen": {
        "en": "RPC workers: {devices}",
        "zh": "RPC 工作节点：{devices}",
    },
    "rpc.device": {
        "en": "{device} at {endpoint} ({free} free of {total})",
        "zh": "{device} 位于 {endpoint}（共 {total}，可用 {free}）",
    },
    "rpc.why_offload": {
        "en": "{layers} of {all} layers on the RPC workers ({free} usable there), what this PC's RAM cannot hold; "
              "the rest runs here",
        "zh": "{all} 层中有 {layers} 层放在 RPC 工作节点上（那里可用 {free}），即本机内存放不下的部分；其余在本机运行",
    },
    "arg.plan_rpc": {
        "en": "IP:PORT[,IP:PORT...]: also count these RPC workers' memory, as 'install --rpc' would "
              "(asked through this PC's installed engine)",
        "zh": "IP:端口[,IP:端口……]：同时计入这些 RPC 工作节点的内存，与“install --rpc”的算法相同"
              "（通过本机已安装的推理引擎询问）",
    },
    "rpc.plan_title": {
        "en": "Plan: {title} {quant} ({size} GiB) on this PC and its RPC workers",
        "zh": "方案：{title} {quant}（{size} GiB），运行于本机及其 RPC 工作节点",
    },
    "rpc.plan_memory": {
        "en": "Predicted memory: RPC workers {workers} of {budget} GiB usable, RAM {ram} of {ram_budget} GiB usable.",
        "zh": "预计内存占用：RPC 工作节点 {workers} / 可用 {budget} GiB，内存 {ram} / 可用 {ram_budget} GiB。",
    },
    "rpc.proposal_title": {
        "en": "Plan: {title} {quant} on this PC and its RPC workers",
        "zh": "方案：{title} {quant}，运行于本机及其 RPC 工作节点",
    },
    "rpc.proposal_memory": {
        "en": "  memory         RPC workers {workers} of {budget} GiB, RAM {ram} of {ram_budget} GiB",
        "zh": "  内存          RPC 工作节点 {workers} / {budget} GiB，内存 {ram} / {ram_budget} GiB",
    },
    "rpc.why_unused": {
        "en": "the model fits this PC alone: the RPC workers are not used (each token would cross the network)",
        "zh": "模型在本机即可放下：不使用 RPC 工作节点（否则每个词元都要经过网络）",
    },
    "rpc.why_cache_ram": {
        "en": "no prompt cache in RAM with RPC workers: saving it aborts the server (llama.cpp issue #26529)",
        "zh": "使用 RPC 工作节点时不在内存中缓存提示词：保存缓存会使服务器中止（llama.cpp issue #26529）",
    },
    "rpc.tune_skipped": {
        "en": "llama.cpp's fit check is not run with RPC workers (it would take their one connection; it also "
              "misjudges them, llama.cpp #21801): the plan's placement stands",
        "zh": "使用 RPC 工作节点时不运行 llama.cpp 的 fit 检查（它会占用工作节点唯一的连接，且对其估计有误，"
              "llama.cpp #21801）：沿用规划的放置方式",
    },
    "rpc.status_worker_up": {"en": "RPC worker {endpoint}: answers", "zh": "RPC 工作节点 {endpoint}：有响应"},
    "rpc.status_worker_down": {
        "en": "RPC worker {endpoint}: does not answer; the server cannot run without it",
        "zh": "RPC 工作节点 {endpoint}：没有响应；没有它服务器无法运行",
    },
    "rpc.status_worker_hint": {
        "en": "Start the worker on that PC (qwenkit team worker-start), then 'qwenkit service start' here.",
        "zh": "请在那台电脑上启动工作节点（qwenkit team worker-start），再在本机运行 'qwenkit service start'。",
    },
}
