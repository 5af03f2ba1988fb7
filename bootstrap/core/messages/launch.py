"""Messages of ``qwenkit launch`` (agent clients: start, ``--config``, ``--restore``, ``--print``)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "cmd.launch": {
        "en": "start an agent client (claude, codex, opencode, aider) against this install, or write its config",
        "zh": "让智能体客户端（claude、codex、opencode、aider）连接本机安装并启动，或写入其配置",
    },
    "arg.launch_client": {
        "en": "claude, codex, opencode or aider; with --print also openwebui, dify, cherry-studio, continue, "
              "langchain, llamaindex, openai-agents",
        "zh": "claude、codex、opencode 或 aider；配合 --print 还可用 openwebui、dify、cherry-studio、continue、"
              "langchain、llamaindex、openai-agents",
    },
    "arg.launch_model": {
        "en": "the installed model the client uses (default: the install's default model)",
        "zh": "客户端使用的已安装模型（默认：安装的默认模型）",
    },
    "arg.launch_config": {
        "en": "write the client's own config file instead of starting it (owner-only; --restore takes it back)",
        "zh": "不启动客户端，而是写入它自己的配置文件（仅本人可读；--restore 可撤销）",
    },
    "arg.launch_restore": {
        "en": "take back exactly what --config wrote",
        "zh": "准确撤销 --config 写入的内容",
    },
    "arg.launch_print": {
        "en": "print the exact settings to enter by hand (GUI and library clients too), nothing started",
        "zh": "打印需手动填写的准确设置（也适用于图形界面和开发库客户端），不启动任何程序",
    },
    "arg.launch_endpoint": {
        "en": "a team gateway (or another install) to use instead of this install; the key comes from --key-file "
              "or QWENKIT_API_KEY",
        "zh": "改用团队网关（或另一台安装）的地址；密钥取自 --key-file 或 QWENKIT_API_KEY",
    },
    "arg.launch_key_file": {
        "en": "a file holding your key for --endpoint (never give a key on the command line)",
        "zh": "存放 --endpoint 所用密钥的文件（切勿在命令行上直接写密钥）",
    },
    "arg.launch_args": {
        "en": "arguments after -- go to the client unchanged, e.g. -- -p \"Say hello.\"",
        "zh": "-- 之后的参数原样交给客户端，例如 -- -p \"Say hello.\"",
    },
    "launch.err_client": {
        "en": "'{name}' is not a client qwenkit starts (it starts: {clients})",
        "zh": "qwenkit 无法启动“{name}”（可启动：{clients}）",
    },
    "launch.hint_print": {
        "en": "For a GUI or library client, 'qwenkit launch --print NAME' shows its settings.",
        "zh": "图形界面或开发库客户端请用 'qwenkit launch --print 名称' 查看设置。",
    },
    "launch.err_print_name": {
        "en": "no settings to print for '{name}' (known: {names})",
        "zh": "没有“{name}”的设置可打印（已知：{names}）",
    },
    "launch.err_missing": {
        "en": "{title} is not installed here ('{program}' is not on PATH)",
        "zh": "本机未安装 {title}（PATH 中找不到 '{program}'）",
    },
    "launch.hint_missing_npm": {
        "en": "Install it with Node.js: '{lines}' (in mainland China add --registry=https://registry.npmmirror.com). "
              "Offline: 'npm pack {package}' and its platform package on a connected PC, copy the .tgz files over "
              "and 'npm install -g' them (docs/agents.md).",
        "zh": "请用 Node.js 安装：'{lines}'（中国大陆可加 --registry=https://registry.npmmirror.com）。"
              "离线机器：在联网电脑上对 {package} 及其平台包执行 'npm pack'，把 .tgz 文件拷过来再用 "
              "'npm install -g' 安装（见 docs/agents.md）。",
    },
    "launch.hint_missing_pip": {
        "en": "Install it into a venv of its own: '{lines}', or with Python newer than {python} '{other}' (in "
              "mainland China add --index-url https://pypi.tuna.tsinghua.edu.cn/simple). Offline: 'pip download "
              "{package}' with Python {python} on a connected PC, then a venv of its own (docs/agents.md).",
        "zh": "请把它装进独立的虚拟环境：'{lines}'；Python 高于 {python} 时用 '{other}'（中国大陆可加 "
              "--index-url https://pypi.tuna.tsinghua.edu.cn/simple）。离线机器：在联网电脑上用 Python {python} "
              "执行 'pip download {package}'，再装进独立的虚拟环境（见 docs/agents.md）。",
    },
    "launch.err_model": {
        "en": "the model '{model}' is not served here (models: {models})",
        "zh": "这里没有提供模型“{model}”（可用模型：{models}）",
    },
    "launch.hint_model": {
        "en": "Name one of them with --model, or leave --model out for the default model.",
        "zh": "请用 --model 指定其中之一，或省略 --model 使用默认模型。",
    },
    "launch.err_endpoint": {
        "en": "{url} is not a server address (http:// or https://, a host and a port, optionally /v1)",
        "zh": "{url} 不是有效的服务器地址（需为 HTTP 或 HTTPS 地址，含主机名和端口，可带 /v1）",
    },
    "launch.hint_endpoint": {
        "en": "Give the gateway as its admin gave it, e.g. --endpoint http://192.168.1.20:8090, with your key in "
              "--key-file FILE or QWENKIT_API_KEY.",
        "zh": "请按管理员提供的写法填写网关地址，例如 --endpoint http://192.168.1.20:8090，"
              "并把密钥放在 --key-file 指定的文件或 QWENKIT_API_KEY 中。",
    },
    "launch.err_key_file_alone": {
        "en": "--key-file is for --endpoint; this install's own key is used without it",
        "zh": "--key-file 只用于 --endpoint；使用本机安装时会自动读取本机密钥",
    },
    "launch.err_key_file": {
        "en": "cannot read the key file {path}: {reason}",
        "zh": "无法读取密钥文件 {path}：{reason}",
    },
    "launch.err_no_key": {
        "en": "no key for --endpoint: --key-file FILE holds none, or QWENKIT_API_KEY is not set",
        "zh": "--endpoint 缺少密钥：--key-file 指定的文件中没有密钥，或未设置 QWENKIT_API_KEY",
    },
    "launch.hint_key": {
        "en": "Put the key your admin gave you ('qwenkit team add-user' prints it) in a file only you can read and "
              "pass --key-file FILE, or set QWENKIT_API_KEY.",
        "zh": "请把管理员给你的密钥（'qwenkit team add-user' 会输出它）存入只有你能读取的文件并用 --key-file "
              "指定，或设置 QWENKIT_API_KEY。",
    },
    "launch.hint_server_install": {
        "en": "Start it with 'qwenkit service start'; 'qwenkit status' says what is wrong.",
        "zh": "请用 'qwenkit service start' 启动服务；'qwenkit status' 会说明问题所在。",
    },
    "launch.hint_server_endpoint": {
        "en": "Check the address with your team's admin ('qwenkit team status' on the gateway PC).",
        "zh": "请与团队管理员核对地址（在网关电脑上运行 'qwenkit team status'）。",
    },
    "launch.err_loading": {
        "en": "the server at {url} is still loading its model",
        "zh": "{url} 上的服务器仍在加载模型",
    },
    "launch.err_key_refused": {
        "en": "the server at {url} refused the key (HTTP {status})",
        "zh": "{url} 上的服务器拒绝了该密钥（HTTP {status}）",
    },
    "launch.hint_key_install": {
        "en": "The key file and the running server disagree: 'qwenkit service restart' starts it with the key "
              "file's key.",
        "zh": "密钥文件与正在运行的服务器不一致：运行 'qwenkit service restart' 以密钥文件中的密钥重新启动服务器。",
    },
    "launch.hint_key_refused": {
        "en": "Ask your team's admin for a working key ('qwenkit team add-user').",
        "zh": "请向团队管理员索取有效密钥（'qwenkit team add-user'）。",
    },
    "launch.err_server": {
        "en": "the server at {url} answered HTTP {status} when asked for its models",
        "zh": "查询模型列表时，{url} 上的服务器返回 HTTP {status}",
    },
    "launch.err_unreachable": {
        "en": "the server at {url} does not answer ({reason})",
        "zh": "{url} 上的服务器没有响应（{reason}）",
    },
    "launch.err_not_server": {
        "en": "the server at {url} does not answer as llama-server does",
        "zh": "{url} 上的服务器的应答与 llama-server 不符",
    },
    "launch.err_no_tools": {
        "en": "{title} is not started: the model '{model}' cannot take tool calls, so every agent request would "
              "fail ({reason})",
        "zh": "未启动 {title}：模型“{model}”无法处理工具调用，智能体的每个请求都会失败（{reason}）",
    },
    "launch.hint_no_tools": {
        "en": "Agent clients need a model with a chat template that has tools, such as the catalog's Qwen3.6 "
              "models ('qwenkit models'); 'qwenkit install --verify' proves the tool path again.",
        "zh": "智能体客户端需要带工具调用聊天模板的模型，例如模型目录中的 Qwen3.6 系列（'qwenkit models'）；"
              "'qwenkit install --verify' 会重新验证工具调用。",
    },
    "launch.err_ctx": {
        "en": "{title} is not started: the context is {ctx} tokens, and its first request alone is about "
              "{tokens} tokens (it needs at least {need} with room for an answer); the server would refuse it",
        "zh": "未启动 {title}：上下文为 {ctx} 个 token，而它的第一个请求就约有 {tokens} 个 token"
              "（加上回答至少需要 {need} 个）；服务器会拒绝该请求",
    },
    "launch.hint_ctx_endpoint": {
        "en": "Ask your team's admin for a larger context ('qwenkit install --ctx 65536' on the members).",
        "zh": "请团队管理员调大上下文（在成员电脑上运行 'qwenkit install --ctx 65536'）。",
    },
    "launch.warn_ctx": {
        "en": "the context is {ctx} tokens; coding agents work best with {want} or more (long sessions will be "
              "compacted often)",
        "zh": "上下文为 {ctx} 个 token；编程智能体最好有 {want} 个或更多（否则长会话会频繁压缩）",
    },
    "launch.verdict_fits": {
        "en": "'qwenkit install --ctx {ctx}' fits here: {title} {quant}, {ram} GiB of RAM and {gpu} GiB on the GPU "
              "(the plan's estimate).",
        "zh": "本机可以运行 'qwenkit install --ctx {ctx}'：{title} {quant}，需要内存 {ram} GiB、显存 {gpu} GiB"
              "（方案估算）。",
    },
    "launch.verdict_other": {
        "en": "'qwenkit install --ctx {ctx}' does not fit {installed} here; the plan takes {title} {quant} instead "
              "({ram} GiB of RAM, {gpu} GiB on the GPU).",
        "zh": "本机无法以 'qwenkit install --ctx {ctx}' 运行 {installed}；方案会改用 {title} {quant}"
              "（内存 {ram} GiB，显存 {gpu} GiB）。",
    },
    "launch.verdict_no_fit": {
        "en": "'qwenkit install --ctx {ctx}' does not fit here: {reason}",
        "zh": "本机无法运行 'qwenkit install --ctx {ctx}'：{reason}",
    },
    "launch.verdict_unknown": {
        "en": "Whether 'qwenkit install --ctx {ctx}' fits could not be planned now ({reason}); "
              "'qwenkit plan {model} --ctx {ctx}' asks again.",
        "zh": "暂时无法规划 'qwenkit install --ctx {ctx}' 是否可行（{reason}）；"
              "可稍后运行 'qwenkit plan {model} --ctx {ctx}' 再试。",
    },
    "launch.err_key_in_argv": {
        "en": "internal error: the key would have been on the client's command line; nothing was started",
        "zh": "内部错误：密钥会出现在客户端的命令行中；未启动任何程序",
    },
    "launch.starting": {
        "en": "Starting {title}: {url}, model {model}, context {ctx} tokens",
        "zh": "正在启动 {title}：{url}，模型 {model}，上下文 {ctx} 个 token",
    },
    "launch.err_need_yes": {
        "en": "--config changes your client's config file and asks first, but there is no terminal to ask on",
        "zh": "--config 会修改客户端的配置文件，需要先确认，但当前没有可用于询问的终端",
    },
    "launch.hint_need_yes": {
        "en": "Add --yes to write it without a prompt.",
        "zh": "加上 --yes 可以不经询问直接写入。",
    },
    "launch.confirm_config": {
        "en": "Write {title}'s settings for this install into {path}? [Y/n]",
        "zh": "要把连接本机安装的 {title} 设置写入 {path} 吗？[Y/n]",
    },
    "launch.cancelled": {"en": "Cancelled; nothing was written.", "zh": "已取消，未写入任何内容。"},
    "launch.warn_config_offline": {
        "en": "{reason}; writing the settings the install record gives",
        "zh": "{reason}；将按安装记录中的设置写入",
    },
    "launch.err_no_config": {
        "en": "{title} has no config file qwenkit edits",
        "zh": "qwenkit 不修改 {title} 的配置文件",
    },
    "launch.hint_no_config": {
        "en": "'qwenkit launch {client}' starts it with the settings; 'qwenkit launch --print {client}' shows them.",
        "zh": "'qwenkit launch {client}' 会带着这些设置启动它；'qwenkit launch --print {client}' 会显示这些设置。",
    },
    "launch.err_config_shape": {
        "en": "{path} cannot be edited safely ({reason}); nothing was written",
        "zh": "无法安全地修改 {path}（{reason}）；未写入任何内容",
    },
    "launch.hint_config_shape": {
        "en": "Add the settings by hand: 'qwenkit launch --print {client}' shows them.",
        "zh": "请手动添加设置：'qwenkit launch --print {client}' 会显示这些设置。",
    },
    "launch.config_same": {
        "en": "{title}'s config {path} already has these settings.",
        "zh": "{title} 的配置文件 {path} 已包含这些设置。",
    },
    "launch.config_written": {
        "en": "Wrote {title}'s settings into {path} (owner-only). Start it as usual; "
              "'qwenkit launch {client} --restore' takes them back.",
        "zh": "已把 {title} 的设置写入 {path}（仅本人可读）。照常启动它即可；"
              "'qwenkit launch {client} --restore' 可撤销这些设置。",
    },
    "launch.key_note": {
        "en": "{title} reads the key from {env}: set it in the shell you start '{program}' from:",
        "zh": "{title} 从 {env} 读取密钥：请在启动 '{program}' 的终端中设置它：",
    },
    "launch.key_note_own": {
        "en": "{title} reads your key from {env}: set it before '{program}'.",
        "zh": "{title} 从 {env} 读取你的密钥：请在运行 '{program}' 前设置它。",
    },
    "launch.restore_nothing": {
        "en": "Nothing to take back: 'qwenkit launch --config' wrote nothing for {title} from this install.",
        "zh": "没有需要撤销的内容：本安装的 'qwenkit launch --config' 没有为 {title} 写入过设置。",
    },
    "launch.restored": {
        "en": "Took back what qwenkit wrote for {title} in {path}; your other settings are as they were.",
        "zh": "已撤销 qwenkit 为 {title} 在 {path} 中写入的内容；你的其他设置保持原样。",
    },
    "launch.err_record": {
        "en": "the record of written client configs {path} is unreadable ({reason})",
        "zh": "客户端配置写入记录 {path} 无法读取（{reason}）",
    },
    "launch.hint_record": {
        "en": "Remove the settings qwenkit added by hand (each block is marked 'qwenkit launch'), then delete "
              "that file.",
        "zh": "请手动删除 qwenkit 添加的设置（每处都标有 'qwenkit launch'），然后删除该文件。",
    },
    "launch.err_config_read": {
        "en": "cannot read {path}: {reason}",
        "zh": "无法读取 {path}：{reason}",
    },
    "launch.err_config_kind": {
        "en": "{path} is not a UTF-8 text file qwenkit can edit",
        "zh": "{path} 不是 qwenkit 可以修改的 UTF-8 文本文件",
    },
    "launch.err_restore_changed": {
        "en": "{path} changed where qwenkit wrote its settings; nothing was taken back",
        "zh": "{path} 中 qwenkit 写入设置的位置已被改动；未撤销任何内容",
    },
    "launch.hint_restore_changed": {
        "en": "Remove qwenkit's settings from that file by hand; then 'qwenkit launch {client} --restore' again "
              "forgets them.",
        "zh": "请手动从该文件中删除 qwenkit 的设置，然后再次运行 'qwenkit launch {client} --restore'，"
              "它会清除这条记录。",
    },
    "launch.restore_forgot": {
        "en": "Nothing qwenkit wrote for {title} is left in {path}; its record is forgotten.",
        "zh": "{path} 中已没有 qwenkit 为 {title} 写入的内容；相应的记录已清除。",
    },
    "launch.hint_config_write": {
        "en": "Make that folder writable for you, or add the settings by hand: 'qwenkit launch --print {client}' "
              "shows them.",
        "zh": "请让你能写入该文件夹，或手动添加设置：'qwenkit launch --print {client}' 会显示这些设置。",
    },
    "launch.r_bash": {"en": "bash / zsh (Linux, macOS)", "zh": "bash / zsh 终端（Linux、macOS）"},
    "launch.r_powershell": {"en": "PowerShell (Windows)", "zh": "PowerShell 终端（Windows）"},
    "launch.r_cmd": {"en": "cmd (Windows)", "zh": "命令提示符 cmd（Windows）"},
    "launch.r_head_env": {
        "en": "{title}: set these in the shell you start it from",
        "zh": "{title}：在启动它的终端中设置以下变量",
    },
    "launch.r_head_file": {
        "en": "{title}: add this to {path}",
        "zh": "{title}：把以下内容加入 {path}",
    },
    "launch.r_head_gui": {"en": "{title}: open {where}", "zh": "{title}：打开{where}"},
    "launch.r_head_lib": {
        "en": "{title} (pip install {package}):",
        "zh": "{title}（先运行 pip install {package}）：",
    },
    "launch.r_then_env": {
        "en": "Then, in the shell you start it from, the key in {var}:",
        "zh": "然后在启动它的终端中，把密钥放入 {var}：",
    },
    "launch.r_key_var": {
        "en": "Set {var} to your own key (from your team's admin) the same way.",
        "zh": "请用同样的方法把 {var} 设为你自己的密钥（由团队管理员提供）。",
    },
    "launch.r_or_launch": {
        "en": "Or let qwenkit do it: 'qwenkit launch {client}' (once), 'qwenkit launch {client} --config' (for good).",
        "zh": "也可以交给 qwenkit：'qwenkit launch {client}'（单次），'qwenkit launch {client} --config'（长期）。",
    },
    "launch.r_or_launch_once": {
        "en": "Or let qwenkit do it: 'qwenkit launch {client}'.",
        "zh": "也可以交给 qwenkit：'qwenkit launch {client}'。",
    },
    "launch.r_aider_meta": {
        "en": "Its context window: save this as .aider.model.metadata.json in your home folder (aider reads it "
              "there):",
        "zh": "上下文窗口：把以下内容保存为主目录下的 .aider.model.metadata.json（aider 会从那里读取）：",
    },
    "launch.r_url": {"en": "URL", "zh": "地址"},
    "launch.r_key": {"en": "API key", "zh": "API 密钥"},
    "launch.r_model": {"en": "Model", "zh": "模型"},
    "launch.r_context": {"en": "Context", "zh": "上下文"},
    "launch.r_key_file": {
        "en": "the contents of {path} (only you can read it: 'cat' or 'Get-Content' shows it)",
        "zh": "文件 {path} 的内容（只有你能读取；用 'cat' 或 'Get-Content' 查看）",
    },
    "launch.r_key_own": {
        "en": "your own key from your team's admin (kept in {env} or a file only you read)",
        "zh": "团队管理员给你的密钥（保存在 {env} 或只有你能读取的文件中）",
    },
    "launch.r_ctx": {"en": "{ctx} tokens", "zh": "{ctx} 个 token"},
    "launch.r_ctx_unknown": {
        "en": "not known now (the server did not say); ask 'qwenkit status'",
        "zh": "暂不可知（服务器未提供）；可用 'qwenkit status' 查看",
    },
    "launch.r_model_listed": {
        "en": "{model} (listed by the server after saving)",
        "zh": "{model}（保存后由服务器列出）",
    },
    "launch.r_openwebui_where": {
        "en": "Admin Panel > Settings > Connections > OpenAI API > + (Add Connection)",
        "zh": "管理员面板 > 设置 > 外部连接 > OpenAI API > +（添加连接）",
    },
    "launch.r_openwebui_ctx": {
        "en": "  Open WebUI does not learn the window: keep long chats under {ctx} tokens, and set Max Tokens in the "
              "model's Advanced Params if answers run long.",
        "zh": "  Open WebUI 无法获知上下文窗口：长对话请控制在 {ctx} 个 token 以内；回答过长时可在模型的"
              "高级参数中设置 'Max Tokens'。",
    },
    "launch.r_docker": {
        "en": "  In Docker on this PC: use http://host.docker.internal:{port}/v1, and install the server with --host "
              "0.0.0.0 (it listens on 127.0.0.1 only by default, which a container cannot reach).",
        "zh": "  若在本机的 Docker 中运行：地址改用 http://host.docker.internal:{port}/v1，"
              "并以 --host 0.0.0.0 安装服务器（默认只监听 127.0.0.1，容器无法访问）。",
    },
    "launch.r_dify_where": {
        "en": "Settings > Model Provider > OpenAI-API-compatible (install it from the plugins) > Add Model",
        "zh": "设置 > 模型供应商 > OpenAI-API-compatible（先从插件中安装）> 添加模型",
    },
    "launch.r_dify_type": {"en": "Model Type", "zh": "模型类型"},
    "launch.r_dify_name": {"en": "Model Name", "zh": "模型名称"},
    "launch.r_dify_url": {"en": "API endpoint URL", "zh": "API 端点地址（'API endpoint URL'）"},
    "launch.r_dify_ctx": {"en": "Model context size", "zh": "模型上下文长度"},
    "launch.r_dify_max": {"en": "Upper bound for max tokens", "zh": "最大 token 上限"},
    "launch.r_dify_tools": {"en": "Function calling", "zh": "函数调用（'Function calling'）"},
    "launch.r_dify_stream": {"en": "Stream function calling", "zh": "流式函数调用（'Stream function calling'）"},
    "launch.r_cherry_where": {
        "en": "Settings > Model Provider > + Add",
        "zh": "设置 > 模型服务 > + 添加",
    },
    "launch.r_cherry_type": {"en": "Provider type", "zh": "提供商类型"},
    "launch.r_cherry_host": {"en": "API Host", "zh": "API 地址"},
    "launch.r_cherry_note": {
        "en": "  Cherry Studio adds /v1/chat/completions to the API Host itself; add the model under Models > Manage "
              "with the name above, and tick its tool-use (function calling) ability.",
        "zh": "  Cherry Studio 会自动在 API 地址后加上 /v1/chat/completions；请在“模型 > 管理”中按上面的名称添加"
              "模型，并勾选其工具调用能力。",
    },
    "launch.r_continue_key": {
        "en": "Then put the line QWENKIT_API_KEY=<the key> in ~/.continue/.env (only you should read it; the key is "
              "{where}): Continue fills in its secrets there.",
        "zh": "然后在 ~/.continue/.env 中写入一行 QWENKIT_API_KEY=<密钥>（该文件应仅本人可读；密钥为{where}）："
              "Continue 会从那里读取它的密钥。",
    },
    "launch.err_mode": {
        "en": "--config, --restore and --print are alternatives: give one",
        "zh": "--config、--restore 和 --print 只能选其一",
    },
    "launch.err_args_with": {
        "en": "arguments after -- are for starting the client, not for {option}",
        "zh": "-- 之后的参数只用于启动客户端，不能与 {option} 一起使用",
    },
}
