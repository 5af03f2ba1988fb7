"""Messages of ``qwenkit uninstall`` and of the per-home installer lock (``bootstrap.core.home_lock``)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "lock.held": {
        "en": "Another qwenkit is already working in {home}.",
        "zh": "另一个 qwenkit 正在使用 {home}。",
    },
    "lock.held_by": {
        "en": "Another qwenkit is already working in {home} (held by pid {pid}, {what}).",
        "zh": "另一个 qwenkit 正在使用 {home}（进程 pid {pid}，{what}）。",
    },
    "lock.hint": {
        "en": "wait for the other qwenkit to finish, or close it",
        "zh": "请等待另一个 qwenkit 结束，或将其关闭。",
    },
    "lock.err_open": {
        "en": "Cannot open the lock file {path}: {detail}",
        "zh": "无法打开锁文件 {path}：{detail}",
    },
    "uninstall.nothing": {
        "en": "Nothing installed in {home}.",
        "zh": "{home} 中没有安装任何内容。",
    },
    "uninstall.not_ours": {
        "en": "{home} has no state.json or .lock of QwenClientKit, so nothing there was touched.",
        "zh": "{home} 中没有 QwenClientKit 的 state.json 或 .lock，因此未改动其中任何内容。",
    },
    "uninstall.confirm": {
        "en": "Remove QwenClientKit from {home}? Models ({size}) will be deleted [y/N] ",
        "zh": "从 {home} 卸载 QwenClientKit？模型（{size}）将被删除 [y/N] ",
    },
    "uninstall.confirm_keep": {
        "en": "Remove QwenClientKit from {home}? Models ({size}) are kept [y/N] ",
        "zh": "从 {home} 卸载 QwenClientKit？模型（{size}）将保留 [y/N] ",
    },
    "uninstall.cancelled": {
        "en": "Cancelled; nothing was removed.",
        "zh": "已取消，未删除任何内容。",
    },
    "uninstall.err_need_yes": {
        "en": "Uninstall asks for confirmation, but there is no terminal to ask on.",
        "zh": "卸载需要确认，但当前没有可用于询问的终端。",
    },
    "uninstall.hint_need_yes": {
        "en": "add --yes to uninstall without a prompt",
        "zh": "加上 --yes 可以不经询问直接卸载。",
    },
    "uninstall.warn_service": {
        "en": "Could not remove the service ({manager}): {detail}; removing the files anyway.",
        "zh": "无法移除服务（{manager}）：{detail}；仍将删除文件。",
    },
    "uninstall.warn_not_removed": {
        "en": "Could not remove {path}: {detail}",
        "zh": "无法删除 {path}：{detail}",
    },
    "uninstall.err_incomplete": {
        "en": "Uninstall incomplete: {count} item(s) in {home} could not be removed.",
        "zh": "卸载未完成：{home} 中有 {count} 项无法删除。",
    },
    "uninstall.hint_incomplete": {
        "en": "close programs using files in the home (a running llama-server) and run uninstall again",
        "zh": "请关闭正在使用该目录中文件的程序（例如正在运行的 llama-server），然后再次运行卸载。",
    },
    "uninstall.removed": {
        "en": "Removed from {home}: {entries}",
        "zh": "已从 {home} 删除：{entries}",
    },
    "uninstall.freed": {
        "en": "Freed {size} ({count} bytes).",
        "zh": "释放了 {size}（{count} 字节）。",
    },
    "uninstall.deferred": {
        "en": "{entries} hold this running program (Windows deletes none): they go, with the home if it is empty, "
              "a few seconds after it exits.",
        "zh": "{entries} 中有正在运行的本程序（Windows 不允许删除）：本程序退出几秒后将删除它们，"
              "主目录为空时也一并删除。",
    },
    "uninstall.models_kept": {
        "en": "Models kept in {path} ({size}).",
        "zh": "模型保留在 {path}（{size}）。",
    },
    "uninstall.home_kept": {
        "en": "{home} is kept: it still holds files that are not QwenClientKit's: {entries}",
        "zh": "保留了 {home}：其中仍有不属于 QwenClientKit 的文件：{entries}",
    },
    "uninstall.home_removed": {
        "en": "Removed the empty folder {home}.",
        "zh": "已删除空文件夹 {home}。",
    },
    "uninstall.done": {
        "en": "QwenClientKit is uninstalled.",
        "zh": "QwenClientKit 已卸载。",
    },
}
