"""Messages of sources and the download engine: progress, retries, integrity and disk errors."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "fetch.bar_total": {"en": "total", "zh": "总计"},
    "progress.start_download": {"en": "{name}: downloading {size}", "zh": "{name}：开始下载 {size}"},
    "progress.start_copy": {"en": "{name}: copying {size} from the bundle", "zh": "{name}：从离线安装包复制 {size}"},
    "progress.start_check": {"en": "{name}: checking {size}", "zh": "{name}：正在校验 {size}"},
    "progress.resume": {
        "en": "{name}: resuming the download, {left} left of {size} ({done} kept from an earlier run)",
        "zh": "{name}：继续下载，{size} 中还剩 {left}（上次运行已下载 {done}）",
    },
    "progress.line": {
        "en": "{name}: {done} of {size} ({percent}%), {rate}/s, about {left} left",
        "zh": "{name}：{done} / {size}（{percent}%），{rate}/秒，约剩 {left}",
    },
    "progress.seconds": {"en": "{n} s", "zh": "{n} 秒"},
    "progress.minutes": {"en": "{m} min {s} s", "zh": "{m} 分 {s} 秒"},
    "progress.hours": {"en": "{h} h {m} min", "zh": "{h} 小时 {m} 分"},
    "progress.done": {
        "en": "{name}: {done} in {seconds} s ({rate}/s)",
        "zh": "{name}：{done}，用时 {seconds} 秒（{rate}/秒）",
    },
    "progress.stopped": {
        "en": "{name}: stopped at {done} of {size} after {seconds} s ({rate}/s)",
        "zh": "{name}：在 {done} / {size} 处停止，用时 {seconds} 秒（{rate}/秒）",
    },
    "fetch.reused": {
        "en": "{name}: already present and verified, not downloaded again",
        "zh": "{name}：已存在且校验通过，无需重新下载",
    },
    "fetch.mirror_dropped": {
        "en": "{name}: source {source} failed ({reason}); continuing from {next}",
        "zh": "{name}：下载源 {source} 失败（{reason}），改用 {next} 继续",
    },
    "fetch.failed": {
        "en": "could not download {name} from {sources}: {reason}",
        "zh": "无法从 {sources} 下载 {name}：{reason}",
    },
    "fetch.changed": {
        "en": "{name} changed on {source} during the download; rerun to fetch the new version",
        "zh": "下载过程中 {source} 上的 {name} 已更新；请重新运行以获取新修订版",
    },
    "fetch.no_source": {
        "en": "{name} has no download source",
        "zh": "{name} 没有可用的下载源",
    },
    "fetch.integrity_retry": {
        "en": "{name}: checksum mismatch, downloading it again",
        "zh": "{name}：校验和不匹配，正在重新下载",
    },
    "fetch.integrity": {
        "en": "{name} failed its SHA-256 check twice from {source} (expected {expected}, got {actual}); "
              "nothing was placed",
        "zh": "{name} 从 {source} 下载两次均未通过 SHA-256 校验（应为 {expected}，实际 {actual}）；未放置任何文件",
    },
    "fetch.disk": {
        "en": "not enough free disk space at {path}: {needed} bytes needed ({needed_gib} GiB), {free} bytes free",
        "zh": "{path} 磁盘空间不足：需要 {needed} 字节（{needed_gib} GiB），可用 {free} 字节",
    },
    "fetch.disk_full": {
        "en": "the disk filled up while writing {path}",
        "zh": "写入 {path} 时磁盘已满",
    },
    "fetch.hint.rerun": {
        "en": "run the same command again: the download resumes where it stopped",
        "zh": "再次运行同一命令即可从中断处继续下载。",
    },
    "fetch.hint.integrity": {
        "en": "the source may be damaged or tampered with; try another source (--source)",
        "zh": "下载源可能已损坏或被篡改；请尝试其他下载源（--source）。",
    },
    "fetch.hint.disk": {
        "en": "free at least {missing} more bytes there, or choose another home (--home)",
        "zh": "请在该位置再释放至少 {missing} 字节，或选择其他安装目录（--home）。",
    },
}
