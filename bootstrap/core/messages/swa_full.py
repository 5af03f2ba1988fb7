"""Messages of the plan's ``--swa-full`` choice (sliding-window models and the prompt cache on disk)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "plan.topic_swa_full": {"en": "swa_full", "zh": "完整 SWA 缓存"},
    "swa_full.why_on": {
        "en": "--swa-full on: this model's sliding-window layers keep the whole context ({mib} MiB more KV), "
              "so a prompt saved before a restart is reused after it; without it they keep only the last "
              "{window} tokens and the whole prompt is read again.",
        "zh": "开启 --swa-full：该模型的滑动窗口层保留整个上下文（KV 多占 {mib} MiB），"
              "重启前保存的提示在重启后可以直接复用；不开启时这些层只保留最后 {window} 个 token，"
              "整个提示须重新读取。",
    },
    "swa_full.why_off_no_disk": {
        "en": "--swa-full off: no prompt cache on disk, so nothing is restored after a restart that the full "
              "sliding-window cache would keep usable; the sliding-window layers keep the last {window} tokens.",
        "zh": "关闭 --swa-full：磁盘上没有提示缓存，重启后没有可恢复的内容；滑动窗口层只保留最后 {window} 个 "
              "token。",
    },
    "swa_full.why_off_no_room": {
        "en": "--swa-full off: the full sliding-window cache ({mib} MiB more KV) does not fit at a {ctx}-token "
              "context with this placement, and a longer context is worth more than a prompt kept across "
              "restarts; after a restart this model reads its prompt again.",
        "zh": "关闭 --swa-full：完整的滑动窗口缓存（KV 多占 {mib} MiB）在 {ctx} token 的上下文和当前放置方式下"
              "放不下，而更长的上下文比跨重启保留提示更有价值；重启后该模型会重新读取提示。",
    },
}
