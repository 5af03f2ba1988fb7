"""The prompt cache of several models (router mode, docs/prompt-cache.md): what ``status`` says per model."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "prompt_cache.status_model": {
        "en": "  {model}: {files} saved slot(s), {tokens} tokens, {mib} MiB, newest {age} old",
        "zh": "  {model}：已保存 {files} 个并发槽，共 {tokens} 个 token，占用 {mib} MiB，最新一次保存距今 {age}",
    },
    "prompt_cache.status_model_empty": {
        "en": "  {model}: nothing saved yet",
        "zh": "  {model}：尚未保存",
    },
}
