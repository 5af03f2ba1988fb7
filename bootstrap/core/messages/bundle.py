"""Messages about offline bundles as an install reads them: the manifest pair, ``bundle verify``, installs."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "bundle.err_platform": {
        "en": "unknown platform {platform}; known: {known}",
        "zh": "未知平台 {platform}；可用：{known}",
    },
    "bundle.hint_recopy": {
        "en": "Copy the bundle again from its source (or rebuild it with qwenkit bundle create), then rerun.",
        "zh": "请从来源重新复制离线包（或用 qwenkit bundle create 重新生成），然后重新运行。",
    },
    "bundle.err_newer": {
        "en": "{where} was made by a newer QwenClientKit ({version})",
        "zh": "{where} 由更新版本的 QwenClientKit（{version}）生成",
    },
    "bundle.hint_newer": {
        "en": "Run the setup program that came with the bundle.",
        "zh": "请运行离线包自带的安装程序。",
    },
    "bundle.err_sums_mismatch": {
        "en": "{where} and payload/SHA256SUMS do not agree: the bundle was altered or copied incompletely",
        "zh": "{where} 与 payload/SHA256SUMS 不一致：离线包被改动或复制不完整",
    },
    "bundle.err_read": {
        "en": "cannot read {path}: {detail}",
        "zh": "无法读取 {path}：{detail}",
    },
    "bundle.hint_no_bundle": {
        "en": "Give the folder that holds payload/manifest.json (made by qwenkit bundle create), or its URL.",
        "zh": "请指定包含 payload/manifest.json 的目录（由 qwenkit bundle create 生成）或其网址。",
    },
    "bundle.err_http": {
        "en": "cannot fetch {url}: {detail}",
        "zh": "无法获取 {url}：{detail}",
    },
    "bundle.hint_http": {
        "en": "Check that the intranet server is up and serves the bundle folder as it is; rerun to resume.",
        "zh": "请检查内网服务器是否运行、是否原样提供离线包目录；重新运行即可续传。",
    },
    "bundle.problem_missing": {
        "en": "missing: {path}",
        "zh": "缺失：{path}",
    },
    "bundle.problem_size": {
        "en": "wrong size: {path} ({actual} bytes, the manifest says {expected})",
        "zh": "大小不符：{path}（{actual} 字节，清单为 {expected}）",
    },
    "bundle.problem_altered": {
        "en": "altered: {path} (sha256 {actual}..., the manifest says {expected}...)",
        "zh": "已被改动：{path}（sha256 {actual}…，清单为 {expected}…）",
    },
    "bundle.problem_link": {
        "en": "not a regular file inside the bundle: {path} (a link; copy the file itself into the bundle)",
        "zh": "不是离线包内的普通文件：{path}（是链接；请把文件本身复制进离线包）",
    },
    "bundle.problem_extra": {
        "en": "not in the manifest: {path}",
        "zh": "清单中没有此文件：{path}",
    },
    "bundle.err_verify": {
        "en": "{count} problem(s) in the bundle at {where}: do not install from it",
        "zh": "{where} 处的离线包有 {count} 个问题：请勿用它安装",
    },
    "bundle.offline_records": {
        "en": "the bundle {where} is not reachable now; checking the install against its saved records",
        "zh": "离线包 {where} 当前不可用；将按已保存的记录检查安装",
    },
    "bundle.using": {
        "en": "Installing from the bundle {where} (made {created} by QwenClientKit {version}); no network needed.",
        "zh": "从离线包 {where} 安装（由 QwenClientKit {version} 于 {created} 生成）；无需联网。",
    },
    "bundle.no_wheels": {
        "en": "the bundle has no Python wheels for {platform}: the Python environment (OpenAI SDK, examples) is "
              "skipped; the server does not need it",
        "zh": "离线包中没有适用于 {platform} 的 Python wheel：跳过 Python 环境（OpenAI SDK、示例）；服务本身不需要它",
    },
    "bundle.variant_fallback": {
        "en": "{reason} The bundle has no {wanted} engine: using {used}.",
        "zh": "{reason} 离线包中没有 {wanted} 引擎：改用 {used}。",
    },
    "bundle.err_no_variant": {
        "en": "the bundle has no engine for this machine (it needs {wanted}; the bundle has {available})",
        "zh": "离线包中没有适用于本机的引擎（需要 {wanted}；离线包中有 {available}）",
    },
    "bundle.hint_no_variant": {
        "en": "Make a bundle for this platform: qwenkit bundle create --platform {platform} ...",
        "zh": "请用 'qwenkit bundle create --platform {platform}' 为本平台生成离线包。",
    },
    "bundle.err_size": {
        "en": "{path} is {actual} bytes; the bundle manifest says {expected}",
        "zh": "{path} 大小为 {actual} 字节，离线包清单记录为 {expected} 字节",
    },
    "bundle.err_not_file": {
        "en": "{path} is not a regular file",
        "zh": "{path} 不是普通文件",
    },
    "bundle.err_same_file": {
        "en": "{path} is both the source and the destination of the copy",
        "zh": "{path} 既是复制的来源又是目标",
    },
    "bundle.err_write": {
        "en": "cannot write {path}: {detail}",
        "zh": "无法写入 {path}：{detail}",
    },
    "bundle.err_gone": {
        "en": "this install needs files from the bundle {where}, which is not reachable now",
        "zh": "本次安装需要离线包 {where} 中的文件，但当前无法访问它",
    },
    "bundle.hint_gone": {
        "en": "Plug the drive in (or start the web server) and rerun, or name another copy with --bundle.",
        "zh": "请插入该驱动器（或启动 Web 服务器）后重新运行，或用 --bundle 指定另一份副本。",
    },
}
