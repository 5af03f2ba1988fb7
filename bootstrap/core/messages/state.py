"""Messages of the install record (``state.json``) and the ``status`` command."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "state.err_field": {
        "en": "the install record state.json is damaged: field '{field}': {detail}",
        "zh": "安装记录 state.json 已损坏：字段“{field}”：{detail}",
    },
    "state.err_read": {"en": "cannot read {path}: {detail}", "zh": "无法读取 {path}：{detail}"},
    "state.err_newer": {
        "en": "state.json has schema {found}, this QwenClientKit reads up to {supported}",
        "zh": "state.json 的格式版本为 {found}，当前 QwenClientKit 最高支持 {supported}",
    },
    "state.hint_newer": {
        "en": "Use the newer QwenClientKit that made this install.",
        "zh": "请使用创建该安装的较新版本 QwenClientKit。",
    },
    "state.hint_damaged": {
        "en": "Run 'qwenkit install' again: it rebuilds the record from the verified files.",
        "zh": "请重新运行 'qwenkit install'：它会根据已校验的文件重建安装记录。",
    },
    "state.err_none": {"en": "nothing is installed in {home}", "zh": "{home} 中尚未安装任何内容"},
    "state.hint_none": {
        "en": "Run 'qwenkit install' (or set QWENKIT_HOME to the install folder).",
        "zh": "请运行 'qwenkit install'（或将 QWENKIT_HOME 设为安装目录）。",
    },
    "state.err_no_model": {"en": "no model file is recorded", "zh": "记录中没有模型文件"},
    "status.title": {"en": "QwenClientKit in {home}", "zh": "QwenClientKit 安装目录：{home}"},
    "status.healthy": {
        "en": "healthy: {model} answers at {endpoint}",
        "zh": "运行正常：{model} 正在 {endpoint} 提供服务",
    },
    "status.unhealthy": {"en": "not healthy: {problems}", "zh": "状态异常：{problems}"},
    "status.hint_unhealthy": {
        "en": "Start it with 'qwenkit service start' or the start script {script}; logs are in {logs}.",
        "zh": "请用 'qwenkit service start' 或启动脚本 {script} 启动；日志位于 {logs}。",
    },
    "status.problem_engine": {"en": "engine missing ({path})", "zh": "推理引擎缺失（{path}）"},
    "status.problem_file": {
        "en": "{role} file missing or changed ({path})",
        "zh": "{role} 文件缺失或已变化（{path}）",
    },
    "status.problem_down": {
        "en": "server not answering at {url} ({detail})",
        "zh": "服务器在 {url} 无响应（{detail}）",
    },
    "status.problem_loading": {"en": "server still loading the model", "zh": "服务器仍在加载模型"},
    "status.problem_auth": {
        "en": "the server does not accept this install's API key",
        "zh": "服务器不接受本次安装的 API 密钥",
    },
    "status.problem_model": {
        "en": "the server does not serve {model}",
        "zh": "服务器未提供模型 {model}",
    },
    "status.line_model": {"en": "model      {model} ({quant})", "zh": "模型       {model}（{quant}）"},
    "status.line_engine": {
        "en": "engine     llama.cpp b{build} {variant}",
        "zh": "推理引擎   llama.cpp b{build} {variant}",
    },
    "status.line_endpoint": {"en": "endpoint   {endpoint}", "zh": "接口地址   {endpoint}"},
    "status.line_key": {"en": "API key    in {path}", "zh": "API 密钥   保存在 {path}"},
    "status.line_service": {"en": "service    {detail}", "zh": "服务       {detail}"},
    "status.line_scripts": {"en": "start      {script}", "zh": "启动脚本   {script}"},
    "status.key_exposed": {
        "en": "{path} can be read by other users of this machine; rerun 'qwenkit install' to make it owner-only again",
        "zh": "{path} 可被本机其他用户读取；重新运行 'qwenkit install' 即可恢复为仅所有者可用",
    },
    "status.exposed": {
        "en": "the server listens on {host}: other machines can connect at {endpoint} (with the API key)",
        "zh": "服务监听 {host}：其他机器可通过 {endpoint} 连接（需 API 密钥）",
    },
}
