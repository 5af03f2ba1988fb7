"""Messages of ``qwenkit bundle create`` / ``bundle verify`` (owned by ``bootstrap/bundle/create.py`` and the
modules it runs: ``bundle.selection``, ``.reuse``, ``.drive``, ``.wheels``, ``.root_files``; and by
``bootstrap/app/commands/bundle.py``)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "bcreate.resolving": {
        "en": "Bundling {models} for {platforms}: resolving files...",
        "zh": "正在打包 {models}（平台：{platforms}）：解析文件……",
    },
    "bcreate.err_out": {
        "en": "{path} is a file, not a folder",
        "zh": "{path} 是文件，不是目录",
    },
    "bcreate.err_no_host_platform": {
        "en": "no bundle platform matches this machine ({system} {machine})",
        "zh": "没有与本机（{system} {machine}）对应的离线包平台",
    },
    "bcreate.hint_platform": {
        "en": "Name the target machines with --platform (for example --platform linux-x64 --platform windows-x64).",
        "zh": "请用 --platform 指定目标机器（例如 --platform linux-x64 --platform windows-x64）。",
    },
    "bcreate.err_python": {
        "en": "unsupported Python version {value}; supported: {known}",
        "zh": "不支持的 Python 版本 {value}；支持：{known}",
    },
    "bcreate.err_not_catalog": {
        "en": "{model} is not a catalog model: a bundle carries catalog models only",
        "zh": "{model} 不是模型目录中的模型：离线包只能包含模型目录中的模型",
    },
    "bcreate.hint_not_catalog": {
        "en": "Add the model to a catalog file (copy payload/catalog.toml, add a [[models]] entry) and point "
              "QWENKIT_CATALOG at it, then bundle it by its id.",
        "zh": "请把该模型加入模型目录文件（复制 payload/catalog.toml 并添加 [[models]] 条目），用 QWENKIT_CATALOG "
              "指向它，再按模型 id 打包。",
    },
    "bcreate.err_setup": {
        "en": "setup file not found: {path}",
        "zh": "找不到安装程序文件：{path}",
    },
    "bcreate.err_setup_name": {
        "en": "setup file name {name} is taken (twice, or a name the bundle uses itself)",
        "zh": "安装程序文件名 {name} 重复或与离线包自身文件冲突",
    },
    "bcreate.home_unreadable": {
        "en": "not reusing files of {home}: {detail}",
        "zh": "不复用 {home} 中的文件：{detail}",
    },
    "bcreate.checking": {
        "en": "Checking {path}...",
        "zh": "正在校验 {path}……",
    },
    "bcreate.linked": {
        "en": "{path}: linked from {source} (no download)",
        "zh": "{path}：已从 {source} 建立硬链接（无需下载）",
    },
    "bcreate.copying": {
        "en": "{path}: copying from {source}...",
        "zh": "{path}：正在从 {source} 复制……",
    },
    "bcreate.err_no_bytes": {
        "en": "no source holds {path}",
        "zh": "没有任何来源提供 {path}",
    },
    "bcreate.err_space": {
        "en": "not enough space in {path}: {needed} more needed, {free} free",
        "zh": "{path} 空间不足：还需 {needed}，可用 {free}",
    },
    "bcreate.hint_space": {
        "en": "Free {missing} there, use a larger drive, or bundle fewer models, quants or platforms.",
        "zh": "请在该处再腾出 {missing}，换用更大的磁盘，或减少模型、量化版本或平台。",
    },
    "bcreate.err_fat32": {
        "en": "{path} ({size}) is larger than a {fstype} (FAT32) drive can hold in one file (4 GiB)",
        "zh": "{path}（{size}）超过 {fstype}（FAT32）磁盘的单个文件上限（4 GiB）",
    },
    "bcreate.hint_fat32": {
        "en": "Format the drive as exFAT (any OS) or NTFS (Windows only), then rerun; copy its files off first.",
        "zh": "请先备份数据，再把该磁盘格式化为 exFAT（各系统通用）或 NTFS（仅 Windows），然后重新运行。",
    },
    "bcreate.wheels": {
        "en": "Python packages for {folder}, Python {python}...",
        "zh": "正在准备 Python 包：{folder}，Python {python}……",
    },
    "bcreate.wheels_markers": {
        "en": "the packages for {folder}, Python {python} may be incomplete (dependencies kept changing)",
        "zh": "{folder}、Python {python} 的 Python 包可能不完整（依赖不断变化）",
    },
    "bcreate.err_pip": {
        "en": "pip could not fetch the Python packages ({what}): {detail}",
        "zh": "pip 无法获取 Python 包（{what}）：{detail}",
    },
    "bcreate.hint_pip": {
        "en": "Check the network or the package index (QWENKIT_PIP_INDEX_URL), or give a folder of wheels with "
              "QWENKIT_WHEELS; rerun to continue.",
        "zh": "请检查网络或软件包索引（QWENKIT_PIP_INDEX_URL），或用 QWENKIT_WHEELS 指定本地 wheel 目录，"
              "然后重新运行。",
    },
    "bcreate.err_no_python": {
        "en": "no Python 3.10-3.13 found to run pip for the bundle's packages",
        "zh": "未找到可运行 pip 的 Python 3.10–3.13，无法准备离线包中的 Python 包",
    },
    "bcreate.hint_no_python": {
        "en": "Install Python 3.12 (python.org, or your package manager), then rerun.",
        "zh": "请安装 Python 3.12（python.org 或系统包管理器），然后重新运行。",
    },
    "bcreate.pip_venv": {
        "en": "Making a temporary pip environment with {python}...",
        "zh": "正在用 {python} 创建临时 pip 环境……",
    },
    "bcreate.err_no_kit": {
        "en": "the QwenClientKit wheel for the bundle could not be found or built",
        "zh": "找不到也无法构建离线包所需的 QwenClientKit wheel",
    },
    "bcreate.hint_no_kit": {
        "en": "Put qwenclientkit-*.whl in the QWENKIT_WHEELS folder (python -m pip wheel --no-deps <checkout>).",
        "zh": "请把 qwenclientkit-*.whl 放进 QWENKIT_WHEELS 目录（python -m pip wheel --no-deps <源码目录>）。",
    },
    "bcreate.stale_removed": {
        "en": "Removed {count} file(s) an earlier bundle left in payload/",
        "zh": "已删除旧离线包留在 payload/ 中的 {count} 个文件",
    },
    "bundle_create.summary": {
        "en": "Bundle ready in {path}: {files} files, {size}",
        "zh": "离线包已生成：{path}，共 {files} 个文件，{size}",
    },
    "bundle_create.summary_kind": {
        "en": "  {kind}: {count} file(s), {size}",
        "zh": "  {kind}：{count} 个文件，{size}",
    },
    "bundle_create.summary_bytes": {
        "en": "  downloaded {downloaded}, reused {reused}; {free} free left on the drive",
        "zh": "  下载 {downloaded}，复用 {reused}；磁盘剩余 {free}",
    },
    "bundle_create.summary_next": {
        "en": "Check a copy with: qwenkit bundle verify {path}",
        "zh": "复制后可用以下命令校验：qwenkit bundle verify {path}",
    },
    "bundle_create.verify_ok": {
        "en": "Bundle {where} is intact: {files} files, {size} checked",
        "zh": "离线包 {where} 完好：已校验 {files} 个文件，{size}",
    },
}
