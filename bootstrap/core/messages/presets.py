"""Messages of a model's preset: its system prompt and sampling (``plan/presets.py``, docs/presets.md)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "presets.err_value": {
        "en": "{what}: {value} is not valid ({expected})",
        "zh": "{what}：{value} 无效（{expected}）",
    },
    "presets.err_key": {
        "en": "{path}: unknown preset key '{name}' (known: {known})",
        "zh": "{path}：未知的预设项 '{name}'（可用：{known}）",
    },
    "presets.err_read": {
        "en": "cannot read the preset file {path}: {detail}",
        "zh": "无法读取预设文件 {path}：{detail}",
    },
    "presets.err_record": {
        "en": "state.json: the recorded preset is not a table",
        "zh": "state.json：记录的预设格式不正确",
    },
    "presets.hint": {
        "en": "docs/presets.md lists each setting and its range; --clear-preset forgets a kept preset.",
        "zh": "每项设置及其范围见 docs/presets.md；--clear-preset 可清除已保存的预设。",
    },
    "presets.expected_number": {"en": "a number", "zh": "应为数字"},
    "presets.expected_int": {"en": "a whole number", "zh": "应为整数"},
    "presets.expected_text": {"en": "text", "zh": "应为文本"},
    "presets.expected_range": {"en": "from {low} to {high}", "zh": "范围为 {low} 到 {high}"},
    "presets.expected_above": {"en": "above {low}, up to {high}", "zh": "应大于 {low}，最大 {high}"},
    "presets.expected_system": {
        "en": "text up to {max} characters; line breaks and tabs, no other control characters",
        "zh": "最多 {max} 个字符的文本；可含换行和制表符，不可含其他控制字符",
    },
    "arg.system": {
        "en": "the model's system prompt, added to every chat request that has none (kept across reruns; "
              "\"\" removes it)",
        "zh": "模型的系统提示词，加到每个没有系统消息的对话请求前（重新运行时保留；\"\" 表示删除）",
    },
    "arg.temperature": {"en": "the model's default temperature (0-5)", "zh": "模型的默认采样温度（0-5）"},
    "arg.top_p": {"en": "the model's default top-p (0-1)", "zh": "模型的默认 top-p 值（0-1）"},
    "arg.top_k": {"en": "the model's default top-k (0: off)", "zh": "模型的默认 top-k 值（0 表示关闭）"},
    "arg.min_p": {"en": "the model's default min-p (0-1)", "zh": "模型的默认 min-p 值（0-1）"},
    "arg.repeat_penalty": {"en": "the model's default repeat penalty (1: off)",
                           "zh": "模型的默认重复惩罚（1 表示关闭）"},
    "arg.presence_penalty": {"en": "the model's default presence penalty (-2 to 2)",
                             "zh": "模型的默认存在惩罚（-2 到 2）"},
    "arg.preset": {"en": "a preset file (TOML: system, temperature, top_p, top_k, min_p, repeat_penalty, "
                         "presence_penalty); options given beside it win",
                   "zh": "预设文件（TOML 格式，键名见 docs/presets.md）；同时给出的选项优先"},
    "arg.clear_preset": {"en": "forget the model's kept preset (the catalog's sampling, no system prompt)",
                         "zh": "清除模型已保存的预设（恢复模型目录的采样设置，无系统提示词）"},
    "fresh.preset_changed": {"en": "the preset changes", "zh": "预设有变化"},
    "status.preset": {"en": "Preset: {items}", "zh": "预设：{items}"},
    "status.preset_of": {"en": "Preset of {name}: {items}", "zh": "{name} 的预设：{items}"},
}
