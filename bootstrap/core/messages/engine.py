"""Messages of the engine stage: pins, release digests, safe extraction, install and probe."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "engine.err_pins_read": {
        "en": "cannot read the engine pins {path}: {detail}",
        "zh": "无法读取引擎清单 {path}：{detail}",
    },
    "engine.err_pins_key": {
        "en": "engine pins {path}: {field} must be {expected}",
        "zh": "引擎清单 {path}：{field} 应为 {expected}",
    },
    "engine.hint_pins": {
        "en": "Fix engines.toml (or unset QWENKIT_ENGINES to use the shipped one).",
        "zh": "请修正 engines.toml（或取消 QWENKIT_ENGINES 以使用自带的清单）。",
    },
    "engine.err_variant": {
        "en": "engine variant {variant} is not pinned in {path} (pinned: {known})",
        "zh": "{path} 中没有引擎构建 {variant}（已有：{known}）",
    },
    "engine.cuda_build_offer": {
        "en": "A CUDA toolkit is present ({toolkit}): building llama.cpp with -DGGML_CUDA=ON would run faster than "
              "the Vulkan build installed here (optional; the kit does not build it for you).",
        "zh": "检测到 CUDA 工具包（{toolkit}）：自行以 -DGGML_CUDA=ON 编译 llama.cpp 会比此处安装的 Vulkan 构建更快"
              "（可选；本工具不会替您编译）。",
    },
    "engine.err_api": {
        "en": "the release API {url} did not answer usefully: {detail}",
        "zh": "发布信息接口 {url} 未能正常响应：{detail}",
    },
    "engine.hint_api": {
        "en": "Check the network or proxy and rerun; a mirror without that API needs sha256 pinned in engines.toml.",
        "zh": "请检查网络或代理后重试；不提供该接口的镜像需要在 engines.toml 中写明 sha256。",
    },
    "engine.err_no_checksum": {
        "en": "no checksum for {name}; pin sha256 in engines.toml (QWENKIT_ENGINES) or install from a bundle",
        "zh": "{name} 没有可用的校验和；请在 engines.toml（QWENKIT_ENGINES）中写明 sha256，或使用离线安装包",
    },
    "engine.hint_no_checksum": {
        "en": "An engine that cannot be verified is never installed.",
        "zh": "无法校验的引擎不会被安装。",
    },
    "engine.err_pin_mismatch": {
        "en": "{name}: the pinned sha256 {pinned} differs from the release's stated {stated}",
        "zh": "{name}：清单中的 sha256 {pinned} 与发布页声明的 {stated} 不一致",
    },
    "engine.hint_pin_mismatch": {
        "en": "The release was replaced or the pin is wrong: check engines.toml before installing.",
        "zh": "发布文件已被替换或清单有误：安装前请核对 engines.toml。",
    },
    "engine.err_archive_member": {
        "en": "{archive}: refused member {member}: {reason}",
        "zh": "{archive}：拒绝解压条目 {member}：{reason}",
    },
    "engine.err_archive_damaged": {
        "en": "{archive} is damaged or not an archive: {detail}",
        "zh": "{archive} 已损坏或不是压缩包：{detail}",
    },
    "engine.hint_archive": {
        "en": "Nothing was installed; the engine archive is not what upstream publishes. Rerun to download it again.",
        "zh": "未安装任何内容；该引擎压缩包与官方发布的不一致。请重新运行以再次下载。",
    },
    "engine.why_path": {
        "en": "absolute path, drive letter or '..' (it would land outside the engine folder)",
        "zh": "绝对路径、盘符或 '..'（会写到引擎目录之外）",
    },
    "engine.why_link": {
        "en": "a link that leads outside the engine folder",
        "zh": "指向引擎目录之外的链接",
    },
    "engine.why_type": {
        "en": "a device, fifo or unknown entry type",
        "zh": "设备文件、管道或未知类型的条目",
    },
    "engine.why_count": {
        "en": "more than {limit} entries",
        "zh": "条目超过 {limit} 个",
    },
    "engine.why_total": {
        "en": "more than {limit} uncompressed",
        "zh": "解压后超过 {limit}",
    },
    "engine.why_size": {
        "en": "its content does not match its declared size",
        "zh": "内容与声明的大小不符",
    },
    "engine.why_damaged": {
        "en": "damaged content ({detail})",
        "zh": "内容损坏（{detail}）",
    },
    "engine.err_no_server": {
        "en": "{archive} holds no {server}",
        "zh": "{archive} 中没有 {server}",
    },
    "engine.err_probe_start": {
        "en": "{server} {arg} failed: {detail}",
        "zh": "{server} {arg} 运行失败：{detail}",
    },
    "engine.err_probe_timeout": {
        "en": "{server} {arg} did not finish within {seconds} s",
        "zh": "{server} {arg} 在 {seconds} 秒内未结束",
    },
    "engine.hint_probe": {
        "en": "The engine does not run on this machine (missing library, wrong OS/CPU, or a GPU driver problem); "
              "run 'qwenkit doctor'.",
        "zh": "该引擎无法在本机运行（缺少库文件、系统或 CPU 不匹配，或显卡驱动问题）；请运行 'qwenkit doctor'。",
    },
    "engine.reused": {
        "en": "engine {build} ({variant}) already installed at {path}",
        "zh": "引擎 {build}（{variant}）已安装于 {path}",
    },
    "engine.installed": {
        "en": "engine {build} ({variant}) installed at {path}",
        "zh": "引擎 {build}（{variant}）已安装到 {path}",
    },
    "engine.version_said": {"en": "  the engine says: '{version}'", "zh": "  引擎自报版本：'{version}'"},
}
