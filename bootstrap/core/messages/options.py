"""Messages of the user's own choices: the context (``--ctx``, ``ctx`` in an answers file) and a header's trained
context; the launchers and README of an offline bundle."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    # --- the context a user asks for (plan/context.py) ---
    "options.arg_ctx": {
        "en": "context length in tokens, or 'auto' for the plan's choice (kept on reruns; a new value changes only "
              "the server's settings, nothing is downloaded again)",
        "zh": "上下文长度（token 数），或用 'auto' 由安装计划选择（重新运行时保留；改用新值只会修改服务参数，"
              "不会重新下载）",
    },
    "options.hint_ctx_value": {
        "en": "Give a number of tokens (e.g. --ctx 32768), or 'auto' to let the plan choose.",
        "zh": "请给出 token 数（如 --ctx 32768），或用 'auto' 由安装计划选择。",
    },
    "options.err_ctx_trained": {
        "en": "--ctx {ctx} is more than {title} was trained for: its maximum is {max} tokens.",
        "zh": "--ctx {ctx} 超出了 {title} 训练时的上下文：最大为 {max} token。",
    },
    "options.hint_ctx_trained": {
        "en": "Use --ctx {max} or less (llama-server would cap each request at {max} tokens anyway).",
        "zh": "请使用 --ctx {max} 或更小的值（llama-server 也会把每个请求限制在 {max} token 以内）。",
    },
    "options.err_ctx_no_fit": {
        "en": "A {ctx}-token context does not fit this machine's memory with any quant of {title} ({ram} GiB of RAM "
              "and {vram} GiB of VRAM to use): the largest that fits is {largest} tokens, with {model} {quant}.",
        "zh": "{ctx} token 的上下文在本机内存中放不下（{title} 的任何量化版本都不行；可用内存 {ram} GiB、"
              "显存 {vram} GiB）：最大可用 {largest} token（{model} {quant}）。",
    },
    "options.hint_ctx_no_fit": {
        "en": "Use --ctx {largest} or less, close other programs, or leave the choice to the plan (install: "
              "--ctx auto; plan: no --ctx).",
        "zh": "请使用 --ctx {largest} 或更小的值，或关闭其他程序，或交由安装计划选择（install 用 --ctx auto；"
              "plan 不加 --ctx）。",
    },
    "options.why_ctx_asked": {
        "en": "context {ctx} tokens: as asked (--ctx); its KV cache takes {kv} MiB.",
        "zh": "上下文 {ctx} token：按 --ctx 的要求；其 KV 缓存占 {kv} MiB。",
    },
    "options.why_quant_for_ctx": {
        "en": "{quant}: the recommended {preferred} does not fit this machine's memory with the {ctx}-token context "
              "asked for.",
        "zh": "{quant}：在所要求的 {ctx} token 上下文下，推荐的 {preferred} 超出本机内存。",
    },
    "options.fresh_ctx_changed": {
        "en": "the context changes from {old} to {new}",
        "zh": "上下文由 {old} 改为 {new}",
    },
    "options.ctx_auto": {"en": "the plan's choice", "zh": "安装计划的选择"},
    "options.ctx_tokens": {"en": "{ctx} tokens", "zh": "{ctx} 个 token"},
    "options.err_ctx_train_zero": {
        "en": "The GGUF header states {name} = 0: llama-server caps every request at the model's trained context, so "
              "no prompt would fit.",
        "zh": "GGUF 头信息中 {name} = 0：llama-server 会把每个请求限制在模型训练时的上下文以内，"
              "因此任何提示词都放不下。",
    },
    "options.err_ctx_train_missing": {
        "en": "The GGUF header has no {name}: llama.cpp does not load a model without its trained context.",
        "zh": "GGUF 头信息中缺少 {name}：缺少训练上下文的模型 llama.cpp 无法加载。",
    },
    "options.hint_ctx_train_zero": {
        "en": "The file was converted without its context length: download it again from its publisher, or set the "
              "value with 'gguf-set-metadata' (from the Python package 'gguf').",
        "zh": "该文件转换时丢失了上下文长度：请从发布者处重新下载，或用 'gguf-set-metadata'（Python 包 'gguf' 提供）"
              "设置该值。",
    },
    # --- a bundle that runs where it lands (bundle/launchers.py) ---
    "options.bundle_no_setup": {
        "en": "No setup program in the bundle: target machines run install.sh (Linux, macOS) or install.bat (Windows), "
              "which need Python {pythons} there; README.txt says what to run. For machines without Python, add a "
              "setup built with 'python build_installer.py' (--setup dist/QwenClientKit-Setup[.exe]).",
        "zh": "离线安装包中没有安装程序：目标机器运行 install.sh（Linux、macOS）或 install.bat（Windows），"
              "需要机器上有 Python {pythons}；README.txt 写明了运行方法。对于没有 Python 的机器，请用 "
              "'python build_installer.py' 构建安装程序并加入（--setup dist/QwenClientKit-Setup[.exe]）。",
    },
    "options.launch_python": {
        "en": "This Python ({python}, version {version}) does not match this bundle: its packages are for Python "
              "{wanted}.",
        "zh": "此 Python（{python}，版本 {version}）与本离线安装包不匹配：其中的依赖包适用于 Python {wanted}。",
    },
    "options.launch_platform": {
        "en": "This bundle holds no packages for '{system} {machine}' (it has them for: {wanted}).",
        "zh": "本离线安装包没有适用于 '{system} {machine}' 的依赖包（仅适用于：{wanted}）。",
    },
    "options.launch_damaged": {
        "en": "Files of this bundle are missing or differ from payload/SHA256SUMS: {files}. Copy the bundle again.",
        "zh": "本离线安装包中的文件缺失或与 payload/SHA256SUMS 不符：{files}。请重新复制离线安装包。",
    },
    "options.launch_preparing": {
        "en": "Preparing QwenClientKit from this bundle with {python} (no network)...",
        "zh": "正在用 {python} 从本离线安装包准备 QwenClientKit（不联网）……",
    },
    "options.launch_venv": {
        "en": "{python} could not make a Python environment ('python -m venv'). On Debian or Ubuntu: 'sudo apt "
              "install python3-venv', then run this again.",
        "zh": "{python} 无法创建 Python 环境（'python -m venv'）。Debian 或 Ubuntu 上请先运行 'sudo apt install "
              "python3-venv'，再重新运行。",
    },
    "options.launch_pip": {
        "en": "The bundle's packages could not be installed with {python} (pip --no-index): see the lines above.",
        "zh": "无法用 {python} 安装离线安装包中的依赖包（pip --no-index）：请查看上面的输出。",
    },
    "options.launch_no_python": {
        "en": "No Python {wanted} found here. Install one from python.org and run this again, or use a setup program "
              "built for this system.",
        "zh": "本机未找到 Python {wanted}。请从 python.org 安装后重新运行，或使用为本系统构建的安装程序。",
    },
    "options.readme_head": {
        "en": "QwenClientKit offline bundle\n"
              "============================\n"
              "This folder installs a local OpenAI-compatible Qwen server with no network at all.",
        "zh": "QwenClientKit 离线安装包\n"
              "========================\n"
              "本目录可在完全不联网的情况下安装本地 OpenAI 兼容的 Qwen 服务。",
    },
    "options.readme_install": {
        "en": "\nInstall, on the machine that will run the server (nothing is downloaded):",
        "zh": "\n安装（在要运行服务的机器上进行，不会下载任何内容）：",
    },
    "options.readme_os_setup_windows": {
        "en": "  {os}: double-click {setup} in this folder.",
        "zh": "  {os}：双击本目录中的 {setup}。",
    },
    "options.readme_os_setup": {
        "en": "  {os}: in a terminal, run \"<this folder>/{setup}\"",
        "zh": "  {os}：在终端中运行 \"<本目录>/{setup}\"",
    },
    "options.readme_os_bat": {
        "en": "  {os}: double-click install.bat in this folder (it needs Python {pythons} from python.org).",
        "zh": "  {os}：双击本目录中的 install.bat（需要 python.org 的 Python {pythons}）。",
    },
    "options.readme_os_sh": {
        "en": "  {os}: in a terminal, run  sh \"<this folder>/install.sh\"  (it needs Python {pythons}: 'python3 "
              "--version' says which one you have).",
        "zh": "  {os}：在终端中运行  sh \"<本目录>/install.sh\"（需要 Python {pythons}：用 'python3 --version' "
              "查看本机版本）。",
    },
    "options.readme_options": {
        "en": "Add --yes to answer its one question in advance, and any other option of qwenkit install, e.g.\n"
              "    --yes --port 8081 --ctx 32768\n"
              "Where qwenkit is installed already: qwenkit install --bundle <this folder>",
        "zh": "加上 --yes 可预先回答唯一的确认问题，也可加上 qwenkit install 的其他选项，例如\n"
              "    --yes --port 8081 --ctx 32768\n"
              "已安装 qwenkit 的机器：qwenkit install --bundle <本目录>",
    },
    "options.readme_noexec": {
        "en": "Linux: if the drive is mounted without exec permission, copy the setup to /tmp first and run it with\n"
              "    install --bundle <this folder>   (install.sh runs with sh either way).",
        "zh": "Linux：若 U 盘挂载时不允许执行程序，请先把安装程序复制到 /tmp，再用\n"
              "    install --bundle <本目录> 运行（install.sh 用 sh 运行，不受影响）。",
    },
    "options.readme_tail": {
        "en": "\nCheck the copy: qwenkit bundle verify <this folder>\n"
              "    or, from this folder: sha256sum -c payload/SHA256SUMS\n"
              "Intranet: serve this folder as it is with any static web server, then on each machine\n"
              "    qwenkit install --bundle http://host/path/ --yes\n"
              "Do not edit files in payload/: the install checks every byte against payload/manifest.json.",
        "zh": "\n校验副本：qwenkit bundle verify <本目录>\n"
              "    或在本目录中运行：sha256sum -c payload/SHA256SUMS\n"
              "内网部署：用任意静态 Web 服务器原样发布本目录，然后在每台机器上运行\n"
              "    qwenkit install --bundle http://主机/路径/ --yes\n"
              "请勿修改 payload/ 中的文件：安装时会按 payload/manifest.json 校验每个字节。",
    },
}
