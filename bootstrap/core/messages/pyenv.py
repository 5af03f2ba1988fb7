"""Messages of the runtime venv (place stage): finding a Python, creating the venv, installing with pip."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "pyenv.no_python": {
        "en": "Skipped the Python environment: no Python 3.10-3.13 found. It would add the OpenAI SDK, the qwenkit "
              "command and examples/agent.py; the server works without it. To add it later: {how}, then rerun the "
              "installer.",
        "zh": "已跳过 Python 环境：未找到 Python 3.10–3.13。它会提供 OpenAI SDK、qwenkit 命令和 examples/agent.py；"
              "没有它服务器也能正常运行。如需补装：{how}，然后重新运行安装程序。",
    },
    "pyenv.how_windows": {
        "en": "run `winget install Python.Python.3.12` or get it from https://www.python.org/downloads/",
        "zh": "运行 `winget install Python.Python.3.12`，或从 https://www.python.org/downloads/ 下载安装",
    },
    "pyenv.how_macos": {
        "en": "get Python 3.12 from https://www.python.org/downloads/ (or `brew install python@3.12`)",
        "zh": "从 https://www.python.org/downloads/ 下载 Python 3.12（或运行 `brew install python@3.12`）",
    },
    "pyenv.how_linux": {
        "en": "install it with your package manager, e.g. `sudo apt install python3 python3-venv`",
        "zh": "用系统的包管理器安装，例如 `sudo apt install python3 python3-venv`",
    },
    "pyenv.kit_missing": {
        "en": "The qwenkit package was not found (no wheel under payload/wheels, no source checkout); the venv gets "
              "the OpenAI SDK only.",
        "zh": "未找到 qwenkit 安装包（payload/wheels 下没有 wheel，也没有源码目录）；该环境只安装 OpenAI SDK。",
    },
    "pyenv.creating": {
        "en": "Creating the Python environment with Python {version}: {path}",
        "zh": "正在用 Python {version} 创建 Python 环境：{path}",
    },
    "pyenv.stale": {
        "en": "The Python environment is incomplete or out of date; recreating it.",
        "zh": "Python 环境不完整或已过期，正在重新创建。",
    },
    "pyenv.installing": {
        "en": "Installing {names} into the Python environment (from {source}); this can take a few minutes...",
        "zh": "正在向 Python 环境安装 {names}（来源：{source}），可能需要几分钟……",
    },
    "pyenv.source_default": {"en": "pip's configured index", "zh": "pip 配置的软件源"},
    "pyenv.reused": {
        "en": "The Python environment is up to date: {path}",
        "zh": "Python 环境已是最新：{path}",
    },
    "pyenv.ready": {
        "en": "Python environment ready: {path}",
        "zh": "Python 环境已就绪：{path}",
    },
    "pyenv.venv_failed": {
        "en": "Could not create the Python environment with {python}: {detail}",
        "zh": "无法用 {python} 创建 Python 环境：{detail}",
    },
    "pyenv.venv_failed_hint": {
        "en": "Check free disk space and that this Python includes the venv module (Debian/Ubuntu: "
              "`sudo apt install python3-venv`).",
        "zh": "请检查磁盘剩余空间，并确认该 Python 带有 venv 模块（Debian/Ubuntu：`sudo apt install python3-venv`）。",
    },
    "pyenv.remove_failed": {
        "en": "Could not remove the old Python environment {path}: {detail}",
        "zh": "无法删除旧的 Python 环境 {path}：{detail}",
    },
    "pyenv.remove_failed_hint": {
        "en": "Close programs running from it (python, qwenkit, agent.py), then rerun the installer.",
        "zh": "请关闭正在使用它的程序（python、qwenkit、agent.py），然后重新运行安装程序。",
    },
    "pyenv.pip_failed": {
        "en": "Installing Python packages failed: {detail}",
        "zh": "安装 Python 软件包失败：{detail}",
    },
    "pyenv.index_unreachable": {
        "en": "Cannot reach the package index {index}: {cause}",
        "zh": "无法连接软件源 {index}：{cause}",
    },
    "pyenv.pip_failed_hint_index": {
        "en": "Check that the package index {index} is reachable (set QWENKIT_PIP_INDEX_URL to a mirror), or install "
              "from an offline bundle's wheels; rerun to retry.",
        "zh": "请确认软件源 {index} 可以访问（可设置 QWENKIT_PIP_INDEX_URL 使用镜像），或使用离线包中的 wheel；"
              "重新运行即可重试。",
    },
    "pyenv.pip_failed_hint_offline": {
        "en": "The offline wheels in {path} do not cover the requirements for Python {version} on this system; use a "
              "bundle made for this platform.",
        "zh": "{path} 中的离线 wheel 不满足本系统 Python {version} 的依赖；请使用为本平台制作的离线包。",
    },
}
