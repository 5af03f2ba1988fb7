"""Messages about inputs as such: documents read through ``file_formats``, filesystem failures (``fs_errors``),
values checked up front (home path, host, MODEL, URLs)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    # file_formats
    "formats.not_regular": {
        "en": "{path} is a {kind}, not a regular file",
        "zh": "{path} 是{kind}，不是普通文件",
    },
    "formats.kind_folder": {"en": "folder", "zh": "目录"},
    "formats.kind_fifo": {"en": "FIFO (named pipe)", "zh": "命名管道（FIFO）"},
    "formats.kind_device": {"en": "device", "zh": "设备文件"},
    "formats.kind_socket": {"en": "socket", "zh": "套接字"},
    "formats.kind_special": {"en": "special file", "zh": "特殊文件"},
    "formats.not_json": {
        "en": "not valid JSON: {detail}",
        "zh": "不是有效的 JSON：{detail}",
    },
    "formats.not_toml": {
        "en": "not valid TOML: {detail}",
        "zh": "不是有效的 TOML：{detail}",
    },
    "formats.link": {
        "en": "{path} is a symbolic link; a regular file is expected here",
        "zh": "{path} 是符号链接；此处需要普通文件",
    },
    "formats.too_large": {
        "en": "{path} is larger than {limit} bytes",
        "zh": "{path} 大于 {limit} 字节",
    },
    "formats.too_deep": {
        "en": "nested more than {limit} levels deep",
        "zh": "嵌套超过 {limit} 层",
    },
    "formats.string_too_long": {
        "en": "a text value is longer than {limit} characters",
        "zh": "某个文本值超过 {limit} 个字符",
    },
    # fs_errors
    "fs.reason_enoent": {"en": "No such file or directory", "zh": "文件或目录不存在"},
    "fs.reason_eacces": {"en": "Permission denied", "zh": "没有权限"},
    "fs.reason_erofs": {"en": "Read-only file system", "zh": "文件系统只读"},
    "fs.reason_enospc": {"en": "No space left on device", "zh": "磁盘空间不足"},
    "fs.reason_eisdir": {"en": "Is a directory", "zh": "这是一个目录"},
    "fs.reason_enotdir": {"en": "Not a directory", "zh": "不是目录"},
    "fs.reason_eexist": {"en": "File exists", "zh": "文件已存在"},
    "fs.reason_ebusy": {"en": "Device or resource busy", "zh": "设备或资源正忙"},
    "fs.reason_enametoolong": {"en": "File name too long", "zh": "文件名过长"},
    "fs.reason_eloop": {"en": "Too many levels of symbolic links", "zh": "符号链接层级过多"},
    "fs.reason_eio": {"en": "Input/output error", "zh": "输入/输出错误"},
    "fs.reason_etxtbsy": {"en": "Text file busy", "zh": "文件正在被执行"},
    "fs.reason_enotempty": {"en": "Directory not empty", "zh": "目录不为空"},
    "fs.no_space_needed": {
        "en": "not enough free space at {path}: {needed} ({needed_bytes} bytes) more are needed",
        "zh": "{path} 所在磁盘空间不足：还需要 {needed}（{needed_bytes} 字节）",
    },
    "fs.no_space": {
        "en": "the disk holding {path} is full ({detail})",
        "zh": "{path} 所在磁盘已满（{detail}）",
    },
    "fs.hint_no_space": {
        "en": "Free some space on that disk (or choose another --home), then rerun: finished downloads are kept.",
        "zh": "请清理该磁盘（或用 --home 换一个位置），然后重新运行：已完成的下载会保留。",
    },
    "fs.name_too_long": {
        "en": "path too long for this filesystem: {path}",
        "zh": "路径对此文件系统过长：{path}",
    },
    "fs.hint_name_too_long": {
        "en": "Use a shorter path.",
        "zh": "请使用更短的路径。",
    },
    "fs.cannot_write": {
        "en": "cannot write to {path}: {detail}",
        "zh": "无法写入 {path}：{detail}",
    },
    "fs.hint_cannot_write": {
        "en": "Choose a folder you can write to (--home), or fix its permissions, then rerun.",
        "zh": "请选择有写权限的目录（--home）或修正其权限，然后重新运行。",
    },
    "fs.cannot_read": {
        "en": "cannot read {path}: {detail}",
        "zh": "无法读取 {path}：{detail}",
    },
    "fs.hint_cannot_read": {
        "en": "Check the path and its permissions.",
        "zh": "请检查该路径及其权限。",
    },
    "fs.not_there": {
        "en": "cannot use {path}: {detail}",
        "zh": "无法使用 {path}：{detail}",
    },
    "fs.hint_not_there": {
        "en": "Check the path: every folder on it must exist and be a folder.",
        "zh": "请检查路径：其中每一级都必须是已存在的目录。",
    },
    # input_checks, launch_spec.parse_host
    "input.too_long": {
        "en": "{option} is {length} characters long; at most {limit} are accepted",
        "zh": "{option} 长 {length} 个字符；最多接受 {limit} 个",
    },
    "input.control": {
        "en": "{option} holds a control character ({char}): {value}",
        "zh": "{option} 含有控制字符（{char}）：{value}",
    },
    "input.hint_value": {
        "en": "Give the value as plain text: no line breaks, tabs or escape sequences.",
        "zh": "请以普通文本给出该值：不要包含换行、制表符或转义序列。",
    },
    "input.bad_host": {
        "en": "--host {host} is neither an IP address nor a valid host name",
        "zh": "--host {host} 既不是 IP 地址，也不是有效的主机名",
    },
    "input.hint_host": {
        "en": "Give an address of this machine: 127.0.0.1 (this machine only), 0.0.0.0 (every interface), "
              "a LAN address such as 192.168.1.20, or a host name.",
        "zh": "请给出本机地址：127.0.0.1（仅本机）、0.0.0.0（所有网卡）、局域网地址如 192.168.1.20，或主机名。",
    },
    "input.exposed": {
        "en": "--host {host}: the server will accept connections from other machines ({where}). Anyone who can "
              "reach it and has the API key can use it: keep the key secret and firewall the port, or use --host "
              "127.0.0.1 to serve this machine only.",
        "zh": "--host {host}：服务将接受其他机器的连接（{where}）。能访问它且持有 API 密钥的人都可以使用："
              "请妥善保管密钥并用防火墙限制端口，或用 --host 127.0.0.1 仅供本机使用。",
    },
    "input.every_interface": {
        "en": "every network interface",
        "zh": "所有网卡",
    },
    "input.that_address": {
        "en": "the interface with that address",
        "zh": "该地址所在网卡",
    },
}
