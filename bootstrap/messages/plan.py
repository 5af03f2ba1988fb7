"""Messages of the catalog, MODEL parsing and the planner: choices, reasons, what does not fit."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "plan.err_unknown_quant": {
        "en": "Model '{model}' has no quant '{quant}'. Available: {available}.",
        "zh": "模型 '{model}' 没有量化版本 '{quant}'。可用：{available}。",
    },
    "plan.err_unknown_model": {
        "en": "Unknown model '{model}'. Catalog models: {available}.",
        "zh": "未知模型 '{model}'。目录中的模型：{available}。",
    },
    "plan.err_catalog_field": {
        "en": "Catalog {path}: '{field}' must be {expected}.",
        "zh": "模型目录 {path}：'{field}' 必须是 {expected}。",
    },
    "plan.err_catalog_read": {
        "en": "Cannot read the catalog {path}: {detail}",
        "zh": "无法读取模型目录 {path}：{detail}",
    },
    "plan.err_bad_model_ref": {
        "en": "Not a model: '{model}'.",
        "zh": "无法识别的模型：'{model}'。",
    },
    "plan.hint_model_ref": {
        "en": "Use a catalog id (qwen3.6-35b-a3b[:QUANT]), hf:OWNER/REPO/PATH[@REV], ms:OWNER/REPO/PATH[@REV] "
              "or a path to a .gguf file.",
        "zh": "请使用目录中的模型 id（qwen3.6-35b-a3b[:量化]）、hf:所有者/仓库/路径[@版本]、"
              "ms:所有者/仓库/路径[@版本] 或 .gguf 文件路径。",
    },
}
