"""Messages of the render stage: the API key file and the lines the start scripts print.

The ``start.*`` texts are rendered into ``run_qwen.sh`` / ``run_qwen.bat`` in the install's language. They must
stay free of cmd.exe's special characters (``% & | < > ^ " ! ( )``) because the .bat echoes them unquoted;
``start_scripts`` checks that at render time.
"""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "apikey.created": {
        "en": "created a new API key in {path}",
        "zh": "已在 {path} 生成新的 API 密钥",
    },
    "apikey.acl_failed": {
        "en": "could not make {path} private to this user ({detail}); other local users may read the API key",
        "zh": "无法将 {path} 设为仅当前用户可访问（{detail}）；本机其他用户可能读取 API 密钥",
    },
    "apikey.perms_fixed": {
        "en": "{path} was accessible to other users; its permissions are now owner-only ({mode})",
        "zh": "{path} 可被其他用户访问；已将权限改为仅所有者可用（{mode}）",
    },
    "apikey.replaced_invalid": {
        "en": "{path} did not hold a usable API key; a new key was written there (clients need the new key)",
        "zh": "{path} 中没有可用的 API 密钥；已写入新密钥（客户端需要改用新密钥）",
    },
    "apikey.normalized": {
        "en": "{path}: line endings rewritten so llama-server reads the key exactly (the key is unchanged)",
        "zh": "{path}：已改写换行符，确保 llama-server 读取到的密钥完全一致（密钥本身未变）",
    },
    "apikey.rotated": {
        "en": "a new API key was written to {path}; restart the server and update your clients",
        "zh": "已将新的 API 密钥写入 {path}；请重启服务并更新客户端配置",
    },
    "apikey.missing": {
        "en": "no API key found at {path}",
        "zh": "在 {path} 未找到 API 密钥",
    },
    "apikey.invalid": {
        "en": "{path} does not hold a usable API key",
        "zh": "{path} 中没有可用的 API 密钥",
    },
    "apikey.not_file": {
        "en": "{path} is not a regular file (a link or a folder); the API key must be a plain file",
        "zh": "{path} 不是普通文件（是链接或文件夹）；API 密钥必须保存在普通文件中",
    },
    "apikey.io": {
        "en": "cannot read or write the API key at {path}: {reason}",
        "zh": "无法读写 {path} 处的 API 密钥：{reason}",
    },
    "apikey.hint.install": {
        "en": "run qwenkit install",
        "zh": "请运行 qwenkit install。",
    },
    "apikey.hint.remove": {
        "en": "remove it, then run qwenkit install again",
        "zh": "请删除它，然后重新运行 qwenkit install。",
    },
    "start.not_found": {
        "en": "file not found:",
        "zh": "找不到文件：",
    },
    "start.reinstall": {
        "en": "run qwenkit install again",
        "zh": "请重新运行 qwenkit install",
    },
    "start.err_home_percent": {
        "en": "run_qwen.bat cannot name the install folder {home}: it holds '%' together with a non-ASCII "
              "character ('{char}')",
        "zh": "run_qwen.bat 无法写出安装目录 {home}：其中既有 '%' 又有非 ASCII 字符（'{char}'）",
    },
    "start.hint_home_percent": {
        "en": "Choose a folder whose path has no '%' (--home DIR or QWENKIT_HOME), e.g. C:\\QwenClientKit; "
              "nothing was downloaded.",
        "zh": "请选择路径中不含 '%' 的文件夹（--home DIR 或 QWENKIT_HOME），例如 C:\\QwenClientKit；尚未下载任何内容。",
    },
}
