"""Messages of the user's own choices: the context (``--ctx``, ``ctx`` in an answers file) and a header's trained
context; the launchers and README of an offline bundle."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    # --- the context a user asks for (plan/context.py) ---
    "options.arg_ctx": {
        "en": "context length in tokens, or 'auto' for the plan's choice (kept on reruns; a new value changes only "
              "the server's settings, nothing is downloaded again)",
        "zh": "上下文长度（token 数），或用 'auto' 由安装计划选择（重新运行时保留；改用新值只会修改服务参数，"
              "不会重新下载）",
    },
    "options.hint_ctx_value": {
        "en": "Give a number of tokens (e.g. --ctx 32768), or 'auto' to let the plan choose.",
        "zh": "请给出 token 数（如 --ctx 32768），或用 'auto' 由安装计划选择。",
    },
    "options.err_ctx_trained": {
        "en": "--ctx {ctx} is more than {title} was trained for: its maximum is {max} tokens.",
        "zh": "--ctx {ctx} 超出了 {title} 训练时的上下文：最大为 {max} token。",
    },
    "options.hint_ctx_trained": {
        "en": "Use --ctx {max} or less (llama-server would cap each request at {max} tokens anyway).",
        "zh": "请使用 --ctx {max} 或更小的值（llama-server 也会把每个请求限制在 {max} token 以内）。",
    },
    "options.err_ctx_no_fit": {
        "en": "A {ctx}-token context does not fit this machine's memory with any quant of {title} ({ram} GiB of RAM "
              "and {vram} GiB of VRAM to use): the largest that fits is {largest} tokens, with {model} {quant}.",
        "zh": "{ctx} token 的上下文在本机内存中放不下（{title} 的任何量化版本都不行；可用内存 {ram} GiB、"
              "显存 {vram} GiB）：最大可用 {largest} token（{model} {quant}）。",
    },
    "options.hint_ctx_no_fit": {
        "en": "Use --ctx {largest} or less, close other programs, or leave the choice to the plan (install: "
              "--ctx auto; plan: no --ctx).",
        "zh": "请使用 --ctx {largest} 或更小的值，或关闭其他程序，或交由安装计划选择（install 用 --ctx auto；"
              "plan 不加 --ctx）。",
    },
    "options.why_ctx_asked": {
        "en": "context {ctx} tokens: as asked (--ctx); its KV cache takes {kv} MiB.",
        "zh": "上下文 {ctx} token：按 --ctx 的要求；其 KV 缓存占 {kv} MiB。",
    },
    "options.why_quant_for_ctx": {
        "en": "{quant}: the recommended {preferred} does not fit this machine's memory with the {ctx}-token context "
              "asked for.",
        "zh": "{quant}：在所要求的 {ctx} token 上下文下，推荐的 {preferred} 超出本机内存。",
    },
    "options.fresh_ctx_changed": {
        "en": "the context changes from {old} to {new}",
        "zh": "上下文由 {old} 改为 {new}",
    },
    "options.ctx_auto": {"en": "the plan's choice", "zh": "安装计划的选择"},
    "options.ctx_tokens": {"en": "{ctx} tokens", "zh": "{ctx} 个 token"},
    "options.err_ctx_train_zero": {
        "en": "The GGUF header states {name} = 0: llama-server caps every request at the model's trained context, so "
              "no prompt would fit.",
        "zh": "GGUF 头信息中 {name} = 0：llama-server 会把每个请求限制在模型训练时的上下文以内，"
              "因此任何提示词都放不下。",
    },
    "options.err_ctx_train_missing": {
        "en": "The GGUF header has no {name}: llama.cpp does not load a model without its trained context.",
        "zh": "GGUF 头信息中缺少 {name}：缺少训练上下文的模型 llama.cpp 无法加载。",
    },
    "options.hint_ctx_train_zero": {
        "en": "The file was converted without its context length: download it again from its publisher, or set the "
              "value with gguf's gguf-set-metadata.",
        "zh": "该文件转换时丢失了上下文长度：请从发布者处重新下载，或用 gguf 包的 gguf-set-metadata 设置该值。",
    },
}
