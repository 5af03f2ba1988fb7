"""Messages of the ``qwenkit`` launcher on the user's PATH (``bootstrap.register.shell_command``, ``user_path``)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "path.on_path": {
        "en": "qwenkit is on your PATH: {path}",
        "zh": "qwenkit 已在 PATH 中：{path}",
    },
    "path.new_terminal": {
        "en": "qwenkit is on your PATH: {path} (its folder was added to your user PATH; open a new terminal to use it)",
        "zh": "qwenkit 已在 PATH 中：{path}（其所在文件夹已加入用户 PATH；请打开新的终端窗口使用）",
    },
    "path.add_line": {
        "en": "qwenkit is in {folder}, which your shell does not search yet; add it to PATH with: {line}",
        "zh": "qwenkit 位于 {folder}，但该文件夹还不在 PATH 中；用这一行加入 PATH：{line}",
    },
    "path.shadowed": {
        "en": "Another qwenkit comes first on your PATH and is the one that runs: {other}; this install's is {path}",
        "zh": "PATH 中排在前面的是另一个 qwenkit，运行的是它：{other}；本次安装的是 {path}",
    },
    "path.foreign": {
        "en": "{path} was not written by QwenClientKit's installer, so it was left alone; typing qwenkit runs {runs}",
        "zh": "{path} 不是 QwenClientKit 安装程序写入的，因此保持不变；输入 qwenkit 运行的是 {runs}",
    },
    "path.kit_command_home": {
        "en": "qwenkit comes from {tool} ({path}) and looks in the default place: reach this install with "
              "'qwenkit --home {home} ...' or QWENKIT_HOME={home}",
        "zh": "qwenkit 由 {tool} 安装（{path}），默认查找标准位置：请用 'qwenkit --home {home} ...' 或 "
              "QWENKIT_HOME={home} 访问本次安装",
    },
    "path.remove_with_tool": {
        "en": "The qwenkit command ({path}) came with {tool} and stays; remove it with: {command}",
        "zh": "qwenkit 命令（{path}）是通过 {tool} 安装的，仍然保留；如需删除请运行：{command}",
    },
    "path.skipped": {
        "en": "qwenkit was not put on your PATH: {reason}",
        "zh": "未将 qwenkit 加入 PATH：{reason}",
    },
    "path.skip_checkout": {
        "en": "this run is a source checkout and {venv} holds no qwenkit to point at",
        "zh": "本次运行的是源码目录，且 {venv} 中没有可指向的 qwenkit",
    },
    "path.write_failed": {
        "en": "qwenkit was not put on your PATH: cannot write {path}: {detail}",
        "zh": "未将 qwenkit 加入 PATH：无法写入 {path}：{detail}",
    },
    "path.registry_failed": {
        "en": "Cannot change your user PATH to hold {folder}: {detail}",
        "zh": "无法修改用户 PATH 以加入 {folder}：{detail}",
    },
    "path.removed": {
        "en": "Removed the qwenkit command {path}.",
        "zh": "已删除 qwenkit 命令 {path}。",
    },
    "path.kept_changed": {
        "en": "Kept {path}: it is no longer the qwenkit command this install wrote.",
        "zh": "保留 {path}：它已不是本次安装写入的 qwenkit 命令。",
    },
    "path.remove_failed": {
        "en": "Cannot remove {path}: {detail}",
        "zh": "无法删除 {path}：{detail}",
    },
    "path.entry_removed": {
        "en": "Removed {folder} from your user PATH.",
        "zh": "已从用户 PATH 中移除 {folder}。",
    },
    "path.entry_kept": {
        "en": "Kept {folder} on your user PATH: other programs' commands are in it.",
        "zh": "{folder} 仍保留在用户 PATH 中：其中还有其他程序的命令。",
    },
}
