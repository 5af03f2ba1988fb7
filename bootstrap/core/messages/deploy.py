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
}
