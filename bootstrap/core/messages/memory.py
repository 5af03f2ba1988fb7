"""Messages of the memory model: GGUF headers it cannot model, impossible launch settings."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "memory.unsupported_arch": {
        "en": "Cannot estimate memory for model architecture '{arch}'.",
        "zh": "无法估算模型架构“{arch}”的内存占用。",
    },
    "memory.unsupported_arch_hint": {
        "en": "Supported architectures: {known}.",
        "zh": "支持的架构：{known}。",
    },
    "memory.bad_hparams": {
        "en": "The GGUF header of this '{arch}' model is invalid: {detail}.",
        "zh": "该“{arch}”模型的 GGUF 头信息无效：{detail}。",
    },
    "memory.bad_cache_type": {
        "en": "Unknown KV cache type '{value}' (known: {known}).",
        "zh": "未知的 KV 缓存类型“{value}”（可用：{known}）。",
    },
    "memory.bad_settings": {
        "en": "Invalid launch settings: {settings}.",
        "zh": "无效的启动参数：{settings}。",
    },
    "memory.quantized_v_needs_fa": {
        "en": "A quantized V cache needs flash attention (llama-server refuses -fa off with it).",
        "zh": "量化的 V 缓存需要启用 Flash Attention（llama-server 不允许与 -fa off 同用）。",
    },
}
