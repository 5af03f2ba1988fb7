"""Messages of the catalog, MODEL parsing and the planner: choices, reasons, what does not fit."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "plan.err_unknown_quant": {
        "en": "Model '{model}' has no quant '{quant}'. Available: {available}.",
        "zh": "模型 '{model}' 没有量化版本 '{quant}'。可用：{available}。",
    },
    "plan.err_unknown_model": {
        "en": "Unknown model '{model}'. Catalog models: {available}.",
        "zh": "未知模型 '{model}'。模型目录中的模型：{available}。",
    },
    "plan.err_catalog_key": {
        "en": "Catalog {path}: unknown key '{field}' (known here: {known}).",
        "zh": "模型目录 {path}：未知的键 '{field}'（此处可用：{known}）。",
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
        "zh": "请使用模型目录中的模型 id（qwen3.6-35b-a3b[:量化]）、hf:所有者/仓库/路径[@修订版]、"
              "ms:所有者/仓库/路径[@修订版] 或 .gguf 文件路径。",
    },
    "plan.err_no_fit": {
        "en": "{title} {quant} does not fit: it needs about {need} GiB at {ctx} tokens of context; this machine can "
              "give {ram} GiB of RAM and {vram} GiB of VRAM.",
        "zh": "{title} {quant} 放不下：在 {ctx} token 上下文下约需 {need} GiB；"
              "本机可用内存 {ram} GiB、显存 {vram} GiB。",
    },
    "plan.hint_no_fit": {
        "en": "Close other programs, choose a smaller model or quant (e.g. qwen3.5-4b), or a shorter --ctx.",
        "zh": "请关闭其他程序，或选择更小的模型/量化版本（如 qwen3.5-4b），或减小 --ctx。",
    },
    "plan.why_quant": {
        "en": "{quant} ({size} GiB): the recommended quant, and it fits.",
        "zh": "{quant}（{size} GiB）：推荐的量化版本，且放得下。",
    },
    "plan.why_quant_smaller": {
        "en": "{quant}: the recommended {preferred} does not fit this machine's memory.",
        "zh": "{quant}：推荐的 {preferred} 超出本机内存。",
    },
    "plan.why_fallback": {
        "en": "{chosen} instead of {preferred}: no quant of {preferred} fits {ram} GiB of RAM and {vram} GiB of "
              "VRAM.",
        "zh": "改用 {chosen}（而非 {preferred}）：{preferred} 的任何量化版本都超出 {ram} GiB 内存和 {vram} GiB 显存。",
    },
    "plan.why_ctx": {
        "en": "context {ctx} tokens: enough for agent tool prompts; its KV cache takes {kv} MiB.",
        "zh": "上下文 {ctx} token：足够智能体工具调用使用；其 KV 缓存占 {kv} MiB。",
    },
    "plan.why_kv_f16": {
        "en": "f16 KV cache: full precision, memory allows it.",
        "zh": "KV 缓存用 f16：全精度，内存足够。",
    },
    "plan.why_kv_q8": {
        "en": "q8_0 KV cache: half the memory of f16 at near-identical quality, so more of the model fits on the GPU.",
        "zh": "KV 缓存用 q8_0：内存仅为 f16 的一半、质量几乎不变，可把更多模型放进显存。",
    },
    "plan.why_fa": {
        "en": "flash attention on: smaller compute buffer, and required by a quantized KV cache.",
        "zh": "开启 flash attention：计算缓冲更小，且量化 KV 缓存需要它。",
    },
    "plan.why_np_one": {
        "en": "1 slot: the whole context for one conversation at a time.",
        "zh": "1 个并发槽：整段上下文留给一次对话。",
    },
    "plan.why_np_many": {
        "en": "{n} slots sharing one unified KV pool: parallel requests (agents, tools) at no extra KV memory.",
        "zh": "{n} 个并发槽共享一个 KV 池：可并行处理请求（智能体、工具），不额外占用 KV 内存。",
    },
    "plan.why_threads": {
        "en": "{n} threads: one per physical core (hyper-threads slow generation down).",
        "zh": "{n} 个线程：每个物理核心一个（超线程反而会拖慢生成）。",
    },
    "plan.why_batch": {
        "en": "batch 2048 / micro-batch 512: llama.cpp's defaults, a good prompt speed for the compute buffer.",
        "zh": "批大小 2048 / 微批 512：llama.cpp 默认值，在计算缓冲大小与提示处理速度间平衡。",
    },
    "plan.why_batch_streams": {
        "en": "batch {batch} / micro-batch {ubatch}: while another client's prompt is read (~{tps} tokens/s), "
              "streams wait at most ~{wait} s for their next token.",
        "zh": "批大小 {batch} / 微批 {ubatch}：读取其他客户端的提示时（约 {tps} token/秒），"
              "流式输出最多等待约 {wait} 秒。",
    },
    "plan.why_batch_streams_slow": {
        "en": "batch {batch} / micro-batch {ubatch}, the smallest worth it: while another client's prompt is read "
              "(~{tps} tokens/s), streams may wait ~{wait} s for their next token.",
        "zh": "批大小 {batch} / 微批 {ubatch}（已是最小的合理值）：读取其他客户端的提示时（约 {tps} token/秒），"
              "流式输出可能等待约 {wait} 秒。",
    },
    "plan.why_cache_ram": {
        "en": "prompt cache up to {mib} MiB of RAM (llama-server's default is 8192), counted in the memory "
              "below: earlier prompts are reused without growing past it.",
        "zh": "提示缓存最多占用 {mib} MiB 内存（llama-server 默认 8192），已计入下面的内存占用："
              "可复用之前的提示，且不会超出此上限。",
    },
    "plan.why_cache_ram_off": {
        "en": "prompt cache off (--cache-ram 0): the RAM the model leaves is too small for it.",
        "zh": "关闭提示缓存（--cache-ram 0）：模型之外剩余的内存不足。",
    },
    "plan.why_checkpoints": {
        "en": "Context checkpoints (to reuse earlier turns): up to {n} per slot, {size} MiB in all.",
        "zh": "上下文检查点（用于复用之前的对话轮次）：每个并发槽最多 {n} 个，共 {size} MiB。",
    },
    "plan.why_cpu_only": {
        "en": "everything in RAM on the CPU: no usable GPU.",
        "zh": "全部放在内存中由 CPU 运行：没有可用的 GPU。",
    },
    "plan.why_all_gpu": {
        "en": "every layer on the {gpu}: the fastest placement, and it fits.",
        "zh": "所有层都放在 {gpu} 上：最快的放置方式，且放得下。",
    },
    "plan.why_moe_split": {
        "en": "all layers on the GPU, routed experts of the first {n} of {total} layers in RAM: attention and KV "
              "stay on the GPU within {vram} GiB.",
        "zh": "所有层放在 GPU 上，前 {n}/{total} 层的路由专家放在内存：注意力和 KV 缓存留在 GPU（{vram} GiB 以内）。",
    },
    "plan.why_layers": {
        "en": "{n} of {total} layers on the GPU: as many as fit in {vram} GiB; the rest run on the CPU.",
        "zh": "{total} 层中的 {n} 层放在 GPU：{vram} GiB 显存内能放下的最多层数，其余由 CPU 运行。",
    },
    "plan.why_mmproj_gpu": {
        "en": "vision projector on the GPU: there is room left.",
        "zh": "视觉投影器放在 GPU：显存还有余量。",
    },
    "plan.why_mmproj_no_gpu": {
        "en": "vision projector in RAM with the model: no usable GPU.",
        "zh": "视觉投影器与模型一起放在内存中：没有可用的 GPU。",
    },
    "plan.why_usable": {
        "en": "{chosen}, not {preferred}: {preferred} fits this machine but answers slowly here, about {slow_tps} "
              "tokens/s with prompts read at about {slow_prompt} tokens/s, so a {tokens}-token prompt and a "
              "{answer}-token answer take about {slow_time}; {chosen} does that in about {time} ({tps} tokens/s, "
              "prompts {prompt} tokens/s). For {preferred} anyway: qwenkit install {preferred_id}",
        "zh": "{chosen}，而不是 {preferred}：{preferred} 能装进本机，但在此回答很慢，约 {slow_tps} token/秒，"
              "读入提示词约 {slow_prompt} token/秒，读完 {tokens} token 的提示词并写出 {answer} token 的回答约需 "
              "{slow_time}；{chosen} 约需 {time}（{tps} token/秒，读入提示词 {prompt} token/秒）。仍要安装 "
              "{preferred}：qwenkit install {preferred_id}",
    },
    "plan.duration_m": {"en": "{m} min {s} s", "zh": "{m} 分 {s} 秒"},
    "plan.duration_s": {"en": "{s} s", "zh": "{s} 秒"},
    "plan.why_mmproj_cpu": {
        "en": "vision projector on the CPU: the GPU memory is worth more to the language model.",
        "zh": "视觉投影器放在 CPU：显存优先留给语言模型。",
    },
    "plan.why_mtp_on": {
        "en": "MTP head on (--spec-type draft-mtp, {n} draft tokens): the file's multi-token-prediction head "
              "drafts tokens the model then checks, often 1.3-2x faster replies; head, its cache and rollback "
              "state take {size} GiB on the GPU.",
        "zh": "启用 MTP 头（--spec-type draft-mtp，每次起草 {n} 个 token）：文件自带的多 token 预测头先起草、"
              "模型再校验，回复通常快 1.3-2 倍；该头及其缓存和回滚状态占用 {size} GiB 显存。",
    },
    "plan.why_mtp_cpu_only": {
        "en": "MTP head left off: without a GPU the head runs on the CPU, where drafting was measured slower "
              "than none.",
        "zh": "不启用 MTP 头：没有 GPU 时该头只能在 CPU 上运行，实测起草反而比不用更慢。",
    },
    "plan.why_mtp_no_room": {
        "en": "MTP head left off: the head and its cache do not fit on the GPU next to the model, and on the CPU "
              "it slows decoding.",
        "zh": "不启用 MTP 头：显存放下模型后已容不下该头及其缓存，而放在 CPU 上会拖慢生成。",
    },
    "plan.why_thinking_off": {
        "en": "thinking off (faster agent answers); turn it on with 'qwenkit install --thinking on', or per request "
              "with 'chat_template_kwargs {{\"enable_thinking\": true}}'.",
        "zh": "默认关闭思考模式（智能体响应更快）；用 'qwenkit install --thinking on' 开启，或在单次请求中设置 "
              "'chat_template_kwargs {{\"enable_thinking\": true}}'。",
    },
    "plan.why_thinking_on": {
        "en": "thinking on: the model reasons before answering; 'qwenkit install --thinking off' turns it off.",
        "zh": "开启思考模式：模型先推理再回答；用 'qwenkit install --thinking off' 关闭。",
    },
    "plan.warn_dropped_flag": {
        "en": "engine build b{build} does not accept {flag}; left out.",
        "zh": "引擎版本 b{build} 不支持 {flag}，已省略。",
    },
    "plan.err_no_shape": {
        "en": "The catalog has no shape facts for '{model}', and no GGUF header of it is at hand.",
        "zh": "模型目录中没有 '{model}' 的结构信息，手头也没有它的 GGUF 文件头。",
    },
    "plan.hint_no_shape": {
        "en": "Download the model first (qwenkit download), or add a [models.shape] table to the catalog.",
        "zh": "请先下载模型（qwenkit download），或在模型目录中添加 [models.shape] 表。",
    },
    "plan.err_no_file": {
        "en": "No such file: {path}",
        "zh": "文件不存在：{path}",
    },
    "plan.err_ctx": {
        "en": "--ctx {ctx} is out of range: use {low} to {high} tokens.",
        "zh": "--ctx {ctx} 超出范围：请使用 {low} 到 {high} 之间的 token 数。",
    },
    "models.title": {
        "en": "Catalog models; this machine: {gpu} ({vram} usable VRAM), {ram} usable RAM.",
        "zh": "模型目录中的模型；本机：{gpu}（可用显存 {vram}），可用内存 {ram}。",
    },
    "models.title_cpu": {
        "en": "Catalog models; this machine: the CPU only, {ram} usable RAM.",
        "zh": "模型目录中的模型；本机：仅 CPU，可用内存 {ram}。",
    },
    "models.approximate": {"en": "~ size as the hub displays it; the exact size comes with the download.",
                           "zh": "~ 为下载站显示的大小；准确大小在下载时获得。"},
    "models.default_model": {"en": " (default model)", "zh": "（默认模型）"},
    "models.default_quant": {"en": "default", "zh": "默认"},
    "models.chosen": {"en": "chosen here", "zh": "本机选用"},
    "models.mmproj": {"en": "+ vision projector {size}, downloaded with any quant",
                      "zh": "+ 视觉投影器 {size}，与任一量化版本一同下载"},
    "models.fits": {
        "en": "Here: {quant} with {ctx} tokens of context, {speed}.",
        "zh": "本机：{quant}，上下文 {ctx} token，{speed}。",
    },
    "models.fits_embedding": {
        "en": "Here: {quant}, inputs of up to {ctx} tokens (served beside a chat model).",
        "zh": "本机：{quant}，单次输入最多 {ctx} token（在对话模型旁提供服务）。",
    },
    "models.speed_gpu": {"en": "fast (all on the GPU)", "zh": "快（全部在 GPU 上）"},
    "models.speed_hybrid": {"en": "medium (GPU and CPU)", "zh": "中等（GPU 与 CPU 混合）"},
    "models.speed_cpu": {"en": "slow (CPU only)", "zh": "较慢（仅 CPU）"},
    "models.no_fit": {"en": "Here: does not fit (not even its smallest quant).",
                      "zh": "本机：放不下（最小的量化版本也不行）。"},
    "models.unknown": {"en": "Here: unknown without its file (the catalog has no shape facts for it).",
                       "zh": "本机：无法判断（模型目录中没有它的结构信息，需要先下载文件）。"},
    "plan.title": {
        "en": "Plan: {title} {quant} ({size} GiB) on {where}",
        "zh": "方案：{title} {quant}（{size} GiB），运行于 {where}",
    },
    "plan.title_cpu": {
        "en": "Plan: {title} {quant} ({size} GiB) on the CPU",
        "zh": "方案：{title} {quant}（{size} GiB），运行于处理器（CPU）",
    },
    "plan.memory_cpu": {
        "en": "Predicted memory: RAM {ram} of {ram_budget} GiB usable; no GPU used.",
        "zh": "预计内存占用：内存 {ram} / 可用 {ram_budget} GiB；不使用 GPU。",
    },
    # The plan's topics as printed (the JSON keeps the English ids): one zh term per concept (glossary: zh.py).
    "plan.topic_model": {"en": "model", "zh": "模型"},
    "plan.topic_variant": {"en": "variant", "zh": "引擎构建"},
    "plan.topic_quant": {"en": "quant", "zh": "量化版本"},
    "plan.topic_facts": {"en": "facts", "zh": "模型信息"},
    "plan.topic_ctx": {"en": "ctx", "zh": "上下文"},
    "plan.topic_cache_type": {"en": "cache_type", "zh": "KV 缓存"},
    "plan.topic_flash_attn": {"en": "flash_attn", "zh": "注意力加速"},
    "plan.topic_parallel": {"en": "parallel", "zh": "并发槽"},
    "plan.topic_threads": {"en": "threads", "zh": "线程"},
    "plan.topic_batch": {"en": "batch", "zh": "批大小"},
    "plan.topic_placement": {"en": "placement", "zh": "放置"},
    "plan.topic_mmproj": {"en": "mmproj", "zh": "视觉投影器"},
    "plan.topic_thinking": {"en": "thinking", "zh": "思考模式"},
    "plan.topic_mtp": {"en": "mtp", "zh": "多 token 预测"},
    "plan.topic_prompt_cache": {"en": "prompt_cache", "zh": "提示缓存"},
    "plan.topic_rpc": {"en": "rpc", "zh": "RPC 工作节点"},
    "plan.memory": {
        "en": "Predicted memory: GPU {gpu} of {gpu_budget} GiB usable, RAM {ram} of {ram_budget} GiB usable.",
        "zh": "预计内存占用：显存 {gpu} / 可用 {gpu_budget} GiB，内存 {ram} / 可用 {ram_budget} GiB。",
    },
    "plan.speed_tps": {
        "en": "Speed: an estimate of about {tps} tokens/s, likely {low}-{high}, for short prompts ({fill} tokens of "
              "context); prompts are read at about {prompt} tokens/s ({prompt_low}-{prompt_high}). Other programs "
              "using this machine can make it several times slower.",
        "zh": "速度：估算短提示词约 {tps} token/秒，大致在 {low}–{high} 之间（上下文 {fill} token）；读入提示词约 "
              "{prompt} token/秒（{prompt_low}–{prompt_high}）。本机上其他程序的负载可能让它慢好几倍。",
    },
    "plan.speed_last_measured": {
        "en": "The last install measured {decode} tokens/s here ({when}), with the load the machine had then.",
        "zh": "上次安装时在本机实测为 {decode} token/秒（{when}），反映的是当时的负载。",
    },
    "plan.hint_models": {
        "en": "'qwenkit models' lists them with what fits this machine; a file of a hub works too: hf:OWNER/REPO/FILE.",
        "zh": "'qwenkit models' 会列出这些模型及本机能运行哪些；也可以直接指定模型仓库中的文件：hf:OWNER/REPO/FILE。",
    },
    "plan.hint_quant": {
        "en": "'qwenkit models' lists the quants of {model} with their sizes.",
        "zh": "'qwenkit models' 会列出 {model} 的量化版本及其大小。",
    },
    "plan.speed_embed": {
        "en": "Speed: input is read at ~{prompt} tokens/s ({prompt_low}-{prompt_high}); an embedding model "
              "generates no text.",
        "zh": "速度：读入输入约 {prompt} token/秒（{prompt_low}–{prompt_high}）；向量嵌入模型不生成文本。",
    },
    "plan.speed_default_ram": {
        "en": "RAM bandwidth not measured on that machine: assumed {memory} (the probe would read about {gbps} GB/s); "
              "`qwenkit doctor --json` there measures it.",
        "zh": "未实测该机器的内存带宽：按{memory}估算（约 {gbps} GB/s）；"
              "在该机器上运行 `qwenkit doctor --json` 可实测。",
    },
    "plan.speed_default_memory": {"en": "DDR4-3200 dual channel", "zh": "双通道 DDR4-3200 内存"},
    "plan.speed_thinking_on": {
        "en": "Thinking is on: the same tokens/s, but an answer takes many more tokens (the reasoning comes first).",
        "zh": "思考模式已开启：每秒 token 数相同，但每个回答要多生成许多 token（先输出推理过程）。",
    },
    "plan.speed_thinking_off": {
        "en": "Thinking is off: with it on, the same tokens/s, but an answer takes many more tokens.",
        "zh": "思考模式已关闭：开启后每秒 token 数相同，但每个回答要多生成许多 token。",
    },
    "plan.why_facts_header": {
        "en": "model facts from the GGUF header: exact tensor sizes.",
        "zh": "模型信息取自 GGUF 文件头：张量大小精确。",
    },
    "plan.why_facts_remote_header": {
        "en": "model facts from the remote GGUF header (a few MB read, nothing downloaded): exact tensor sizes.",
        "zh": "模型信息取自远程 GGUF 文件头（只读取了几 MB，未下载模型）：张量大小精确。",
    },
    "plan.why_facts_catalog": {
        "en": "model facts from the catalog (the file is not downloaded yet): sizes within a few percent.",
        "zh": "模型信息取自模型目录（文件尚未下载）：大小误差在百分之几以内。",
    },
}
