"""The prompt cache on disk (docs/prompt-cache.md): the plan's budget and what ``status`` says of it."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "plan.topic_prompt_cache_disk": {"en": "prompt_cache_disk", "zh": "磁盘提示缓存"},
    "prompt_cache.why_disk": {
        "en": "prompt cache on disk up to {mib} MiB: the server's slots are saved before a stop and put back after a "
              "start, so an agent's long prompt is not read again after a restart, an upgrade or a reboot.",
        "zh": "磁盘上的提示缓存最多 {mib} MiB：停止前保存服务器的并发槽，启动后恢复，"
              "重启、升级或开机之后无需重新读取智能体的长提示。",
    },
    "prompt_cache.why_disk_off": {
        "en": "prompt cache on disk off: the disk left after the model is too small for it.",
        "zh": "关闭磁盘上的提示缓存：模型之外剩余的磁盘空间不足。",
    },
    "prompt_cache.status_line": {
        "en": "Prompt cache: {files} saved slot(s), {tokens} tokens, {mib} MiB of {budget} MiB, newest {age} old",
        "zh": "提示缓存：已保存 {files} 个并发槽，共 {tokens} 个 token，占用 {mib} MiB（上限 {budget} MiB），"
              "最新一次保存距今 {age}",
    },
    "prompt_cache.status_empty": {
        "en": "Prompt cache: nothing saved yet (up to {budget} MiB on disk)",
        "zh": "提示缓存：尚未保存（磁盘上限 {budget} MiB）",
    },
}
