"""Messages of the deploy half of the pipeline (place → tune → render → register → verify → record)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "deploy.flag_dropped": {
        "en": "this engine does not accept {flag}: left out of the start script",
        "zh": "当前推理引擎不支持 {flag}：已从启动脚本中省略",
    },
    "deploy.port_moved": {
        "en": "Port {port} is taken by another program; the server uses port {new} instead.",
        "zh": "端口 {port} 已被其他程序占用；服务改用端口 {new}。",
    },
    "deploy.rolling_back": {
        "en": "Going back to the previous install ({model}) ...",
        "zh": "正在恢复到之前的安装（{model}）……",
    },
    "deploy.interrupted_rolled_back": {
        "en": "Upgrade cancelled; the previous install ({model}) is back and serving at {url}",
        "zh": "升级已取消；已恢复之前的安装（{model}），仍在 {url} 提供服务",
    },
    "deploy.err_rolled_back": {
        "en": "the upgrade did not start ({reason}); the previous install ({model}) is back and serving at {url}",
        "zh": "升级后的服务未能启动（{reason}）；已恢复之前的安装（{model}），仍在 {url} 提供服务",
    },
    "deploy.hint_rolled_back": {
        "en": "Nothing was lost. See the log in the install folder's logs/, then run 'qwenkit install' again.",
        "zh": "没有丢失任何东西。请查看安装目录 logs/ 下的日志，然后重新运行 'qwenkit install'。",
    },
    "deploy.err_rollback_failed": {
        "en": "the upgrade did not start ({reason}), and the previous install did not start again either: {detail}",
        "zh": "升级后的服务未能启动（{reason}），之前的安装也未能重新启动：{detail}",
    },
    "deploy.hint_rollback_failed": {
        "en": "Its files are back in place: run 'qwenkit service start', or 'qwenkit install' to try again.",
        "zh": "原有文件已恢复：请运行 'qwenkit service start'，或重新运行 'qwenkit install'。",
    },
    "switch.refused": {
        "en": "{file} cannot serve, so nothing was changed: {reason}",
        "zh": "{file} 无法提供服务，因此没有做任何更改：{reason}",
    },
    "switch.hint_refused_upgrade": {
        "en": "The previous install keeps serving. A newer revision or another quant will be installed normally "
              "(qwenkit install MODEL:QUANT).",
        "zh": "之前的安装继续提供服务。较新的修订版或其他量化版本可以正常安装（qwenkit install MODEL:QUANT）。",
    },
    "switch.hint_refused_first": {
        "en": "Choose another quant (qwenkit install MODEL:QUANT), or wait for a newer revision of this file.",
        "zh": "请选择其他量化版本（qwenkit install MODEL:QUANT），或等待该文件的较新修订版。",
    },
    "switch.refused_before": {
        "en": "{file} (revision {revision}) was refused on {when}, so nothing was changed: {reason}",
        "zh": "{file}（修订版 {revision}）已于 {when} 被拒绝，因此没有做任何更改：{reason}",
    },
    "switch.gap": {
        "en": "Switched over in {gap} s: the new server answered {load} s after it started.",
        "zh": "切换用时 {gap} 秒：新服务启动后 {load} 秒即可响应。",
    },
    "switch.reason_damaged": {
        "en": "the file is damaged or incomplete ({detail})",
        "zh": "文件已损坏或不完整（{detail}）",
    },
}
