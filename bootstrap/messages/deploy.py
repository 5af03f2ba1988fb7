"""Messages of the deploy half of the pipeline (place → tune → render → register → verify → record)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "deploy.flag_dropped": {
        "en": "this engine does not accept {flag}: left out of the start script",
        "zh": "当前推理引擎不支持 {flag}：已从启动脚本中省略",
    },
}
