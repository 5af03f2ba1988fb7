"""Messages about the output itself: a stdout that cannot take the bytes, progress lines, the --verbose option."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "console.err_output": {
        "en": "could not write the output to stdout: {reason}",
        "zh": "无法把输出写到标准输出：{reason}",
    },
    "console.hint_output": {
        "en": "Send it where there is room (another file or disk), or run the command without the redirection.",
        "zh": "请把输出重定向到有空间的位置（其他文件或磁盘），或去掉重定向后重新运行。",
    },
    "arg.verbose": {
        "en": "also show the technical lines: pip's command line, the tuning details, the engine's own log",
        "zh": "同时显示技术细节：pip 命令行、调优细节、推理引擎自己的日志",
    },
    "cmd.bundle_create": {
        "en": "write an offline bundle folder: engine builds, models, Python wheels and a manifest of SHA-256 sums",
        "zh": "生成离线安装包目录：推理引擎构建、模型、Python 依赖包以及 SHA-256 校验清单",
    },
    "cmd.bundle_verify": {
        "en": "check every file of a bundle (folder or URL) against its manifest: missing, extra or altered files",
        "zh": "按清单校验离线安装包（目录或 URL）中的每个文件：缺失、多余或被改动的文件",
    },
    "pyenv.pip_at": {
        "en": "  pip: fetching {name} ({count} packages so far)",
        "zh": "  pip：正在获取 {name}（已获取 {count} 个包）",
    },
    "install.checks_passed": {
        "en": "The other {count} checks passed ('qwenkit doctor' shows them all).",
        "zh": "其余 {count} 项检查均通过（'qwenkit doctor' 可查看全部）。",
    },
    "install.checks_all_passed": {
        "en": "All {count} checks of this machine passed ('qwenkit doctor' shows them).",
        "zh": "本机全部 {count} 项检查均通过（'qwenkit doctor' 可查看详情）。",
    },
}
