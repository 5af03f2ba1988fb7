"""Messages of the names users type for a model (``catalog/model_names.py``, docs/model-names.md): an ambiguous
name, and an installed model named another way."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "names.err_ambiguous": {
        "en": "'{model}' could name more than one model: {readings}",
        "zh": "'{model}' 可能指多个模型：{readings}",
    },
    "names.hint_ambiguous": {
        "en": "Give one of them exactly; 'qwenkit models' lists the catalog's ids.",
        "zh": "请准确输入其中一个；运行 'qwenkit models' 查看模型目录中的 ID。",
    },
}
