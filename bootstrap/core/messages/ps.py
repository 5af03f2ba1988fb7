"""Messages of ``qwenkit ps``, ``qwenkit stop MODEL`` and ``install --keep-alive`` (issue 40: what is loaded, unload
it, idle memory given back)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "cmd.ps": {
        "en": "show the installed models and what each holds now: loaded or asleep, memory against the plan",
        "zh": "显示已安装的模型及其当前占用：已加载或休眠，内存与规划对比",
    },
    "cmd.stop": {
        "en": "unload one model now (its files stay; the next request loads it again)",
        "zh": "立即卸载一个模型（文件保留；下一个请求会重新加载）",
    },
    "ps.arg_stop_model": {
        "en": "the model's name as 'qwenkit ps' lists it",
        "zh": "模型名称，即 'qwenkit ps' 列出的名称",
    },
    "ps.arg_keep_alive": {
        "en": "how long a model stays loaded after its last request: 30s, 5m, 1h, 0 (unload at once), "
              "-1 or never (keep it); default 30m",
        "zh": "模型在最后一个请求后保持加载的时长：30s、5m、1h、0（立即卸载）、-1 或 'never'（一直保留）；默认 30m",
    },
    "ps.err_keep_alive": {
        "en": "--keep-alive takes a duration (got {value})",
        "zh": "--keep-alive 需要一个时长（收到 {value}）",
    },
    "ps.hint_keep_alive": {
        "en": "Give seconds or a duration such as 30s, 5m, 1h or 1h30m; 0 unloads at once, -1 or never keeps it "
              "loaded (at most a year).",
        "zh": "请给出秒数或时长，例如 30s、5m、1h 或 1h30m；0 表示立即卸载，-1 或 'never' 表示一直保留（最长一年）。",
    },
    "ps.err_keep_alive_beside": {
        "en": "--keep-alive is set for the whole install, not with a model added beside the default",
        "zh": "--keep-alive 对整个安装生效，不能在添加其他模型时单独设置",
    },
    "ps.hint_keep_alive_beside": {
        "en": "Add the model first, then run 'qwenkit install --keep-alive DURATION' (no MODEL).",
        "zh": "请先添加模型，再运行 'qwenkit install --keep-alive 时长'（不带 MODEL）。",
    },
    "ps.fresh_keep_alive_changed": {
        "en": "the idle time before a model is unloaded changes from {old} to {new}",
        "zh": "模型空闲卸载时间由 {old} 改为 {new}",
    },
    "ps.proposal_keep": {
        "en": "  idle unload    after {keep} without a request (memory given back; --keep-alive)",
        "zh": "  空闲卸载      无请求 {keep} 后（归还内存；--keep-alive）",
    },
    "ps.proposal_keep_never": {
        "en": "  idle unload    never (--keep-alive never)",
        "zh": "  空闲卸载      从不（'--keep-alive never'）",
    },
    "ps.err_unknown": {
        "en": "no installed model is named {name} (installed: {names})",
        "zh": "没有名为 {name} 的已安装模型（已安装：{names}）",
    },
    "ps.hint_unknown": {
        "en": "'qwenkit ps' lists the installed models by name.",
        "zh": "'qwenkit ps' 会按名称列出已安装的模型。",
    },
    "ps.err_one_model": {
        "en": "{name} is the only model of this install: its server cannot unload it and keep serving "
              "(it frees the memory by itself after {keep} idle)",
        "zh": "{name} 是本安装唯一的模型：其服务器无法在继续服务的同时卸载它（空闲 {keep} 后会自行释放内存）",
    },
    "ps.hint_one_model": {
        "en": "To free its memory now: 'qwenkit service stop' ('qwenkit service start' brings it back); "
              "a shorter idle time: 'qwenkit install --keep-alive 5m'.",
        "zh": "要立即释放内存：运行 'qwenkit service stop'（'qwenkit service start' 可恢复）；"
              "缩短空闲时间：'qwenkit install --keep-alive 5m'。",
    },
    "ps.err_down": {
        "en": "the server at {url} does not answer ({detail})",
        "zh": "{url} 处的服务器没有响应（{detail}）",
    },
    "ps.server_down": {
        "en": "the server does not answer ({detail}): no model is loaded",
        "zh": "服务器没有响应（{detail}）：没有模型被加载",
    },
    "ps.hint_down": {
        "en": "Start it with 'qwenkit service start'; 'qwenkit status' and 'qwenkit logs' say more.",
        "zh": "请运行 'qwenkit service start' 启动它；'qwenkit status' 和 'qwenkit logs' 会给出更多信息。",
    },
    "ps.err_unload": {
        "en": "the server refused to unload {name} (HTTP {status}: {detail})",
        "zh": "服务器拒绝卸载 {name}（HTTP {status}：{detail}）",
    },
    "ps.err_unload_slow": {
        "en": "{name} was still not unloaded after {seconds} s",
        "zh": "{seconds} 秒后 {name} 仍未卸载",
    },
    "ps.unloaded": {
        "en": "{name} is unloaded: its memory is given back, its files stay; the next request that names it loads it "
              "again",
        "zh": "{name} 已卸载：内存已归还，文件保留；下一个指定它的请求会重新加载",
    },
    "ps.not_loaded": {
        "en": "{name} is not loaded: nothing to free",
        "zh": "{name} 未加载：无需释放",
    },
    "ps.col_name": {"en": "MODEL", "zh": "模型"},
    "ps.col_state": {"en": "STATE", "zh": "状态"},
    "ps.col_memory": {"en": "MEMORY (NOW / PLAN)", "zh": "内存（当前/规划）"},
    "ps.col_slots": {"en": "BUSY / SLOTS", "zh": "忙碌/并发槽"},
    "ps.col_idle": {"en": "IDLE FOR", "zh": "已空闲"},
    "ps.col_unloads": {"en": "UNLOADS IN", "zh": "卸载倒计时"},
    "ps.unloads_never": {"en": "never", "zh": "不卸载"},
    "ps.unloads_busy": {"en": "busy", "zh": "处理中"},
    "ps.default": {"en": " (default)", "zh": "（默认）"},
    "ps.state_loaded": {"en": "loaded", "zh": "已加载"},
    "ps.state_loading": {"en": "loading", "zh": "加载中"},
    "ps.state_unloaded": {"en": "unloaded", "zh": "已卸载"},
    "ps.state_sleeping": {"en": "asleep (reloads on the next request)", "zh": "休眠（下一个请求时重新加载）"},
    "status.model_sleeping": {"en": "asleep", "zh": "休眠"},
    "ps.keep_never": {
        "en": "Idle models stay loaded (install --keep-alive never); 'qwenkit stop MODEL' unloads one.",
        "zh": "空闲模型保持加载（'qwenkit install --keep-alive never'）；'qwenkit stop MODEL' 可卸载其中一个。",
    },
    "ps.keep_after": {
        "en": "A model idle for {keep} is unloaded and its memory given back (install --keep-alive); the next request "
              "loads it again.",
        "zh": "模型空闲 {keep} 后会被卸载并归还内存（install --keep-alive）；下一个请求会重新加载。",
    },
}
