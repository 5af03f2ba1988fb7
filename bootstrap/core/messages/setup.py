"""Messages of the frozen setup: its first-start checks and the "press Enter" pause of a double-clicked window."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "setup.resource_missing": {
        "en": "The setup's built-in '{name}' folder is missing: {detail}",
        "zh": "安装程序内置的“{name}”文件夹缺失：{detail}",
    },
    "setup.resource_file_missing": {
        "en": "The setup's built-in '{name}' folder lacks {file} (looked in {path}).",
        "zh": "安装程序内置的“{name}”文件夹缺少 {file}（位置：{path}）。",
    },
    "setup.payload_bad": {
        "en": "The setup's built-in payload/{file} is unusable: {detail}",
        "zh": "安装程序内置的 payload/{file} 无法使用：{detail}",
    },
    "setup.render_failed": {
        "en": "The template engine cannot render {name}: {detail}",
        "zh": "模板引擎无法渲染 {name}：{detail}",
    },
    "setup.tls_failed": {
        "en": "TLS cannot be set up the way downloads need it: {detail}",
        "zh": "无法按下载所需的方式建立 TLS：{detail}",
    },
    "setup.tls_no_ca": {
        "en": "No trusted CA certificates were found to verify downloads (looked in: {where}).",
        "zh": "找不到用于验证下载的受信任 CA 证书（查找位置：{where}）。",
    },
    "setup.hint_rebuild": {
        "en": "This setup program is damaged or was built incompletely: download it again "
              "(builders: docs/windows-setup.md).",
        "zh": "此安装程序已损坏或构建不完整：请重新下载（构建者请参阅 docs/windows-setup.md）。",
    },
    "setup.hint_tls": {
        "en": "Install the system's CA certificates (e.g. the ca-certificates package), or point SSL_CERT_FILE at "
              "a CA bundle file.",
        "zh": "请安装系统的 CA 证书（例如 ca-certificates 软件包），或将 SSL_CERT_FILE 指向一个 CA 证书文件。",
    },
    "setup.failed": {
        "en": "Setup failed (exit {code}); the lines above say why.",
        "zh": "安装失败（退出码 {code}）；原因见上面几行。",
    },
    "setup.pause": {
        "en": "Press Enter to close this window.",
        "zh": "按回车键关闭此窗口。",
    },
}
