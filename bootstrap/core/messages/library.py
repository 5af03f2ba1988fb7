"""Messages of several models in one home: adding, upgrading and removing a model, the router's preset file and
the check that every model answers (``install/library.py``, ``render/model_preset.py``, ``verify/models_check``)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "cmd.remove": {
        "en": "remove one installed model (not the default) and free its files; the others keep serving",
        "zh": "删除一个已安装的模型（默认模型除外）并释放其文件；其他模型继续服务",
    },
    "arg.remove_name": {
        "en": "the model's name, as `qwenkit status` lists it",
        "zh": "模型名称，即 `qwenkit status` 列出的名称",
    },
    "arg.install_default": {
        "en": "make MODEL this home's default model (replacing the current default) instead of adding it beside",
        "zh": "将 MODEL 设为默认模型（替换当前默认模型），而不是添加到已有模型旁边",
    },
    "library.same_engine": {
        "en": "the engine already installed ({variant}), which every model of this home shares",
        "zh": "使用已安装的推理引擎（{variant}），本安装目录中的所有模型共用它",
    },
    "library.confirm": {
        "en": "Add {name} ({role}) beside the installed models: {file}, {size}; about {ram} of RAM when loaded; all "
              "models together {together} of {total}",
        "zh": "在已安装的模型旁添加 {name}（{role}）：{file}，{size}；加载后约占 {ram} 内存；"
              "所有模型合计 {together}（本机共 {total}）",
    },
    "library.not_together": {
        "en": "not every model fits in memory at once: at most {n} of {count} stay loaded, the least recently used "
              "one is unloaded to load another (a request to it waits for the load)",
        "zh": "内存不足以同时加载所有模型：{count} 个中最多同时加载 {n} 个，加载其他模型时会卸载最久未用的一个"
              "（对它的请求需等待加载）",
    },
    "library.unchanged": {
        "en": "Up to date: {name} is installed and served at {url}",
        "zh": "已是最新：{name} 已安装，服务地址 {url}",
    },
    "library.added": {
        "en": "Added {name}: {count} models served at {url}. A request chooses one with \"model\": \"{name}\"; "
              "a request that names no model still goes to {default}, as before.",
        "zh": "已添加 {name}：{count} 个模型在 {url} 提供服务。请求中用 \"model\": \"{name}\" 选择它；"
              "未指定模型的请求仍由 {default} 处理，与之前相同。",
    },
    "library.try_embeddings": {
        "en": "Embeddings from {name} (the key is read from its file):",
        "zh": "用 {name} 生成向量（密钥从其文件读取）：",
    },
    "library.try_rag": {
        "en": "A RAG example that uses {name} and {default}: {command}",
        "zh": "使用 {name} 和 {default} 的 RAG 示例：{command}",
    },
    "library.upgraded": {
        "en": "Upgraded {name}: {count} models served at {url}",
        "zh": "已升级 {name}：{count} 个模型在 {url} 提供服务",
    },
    "library.removed": {
        "en": "Removed {name}: {freed} freed; {count} models left behind the endpoint.",
        "zh": "已删除 {name}：释放了 {freed}；服务地址后还有 {count} 个模型。",
    },
    "remove.confirm": {
        "en": "Remove {name} and delete its files ({size})? [y/N]",
        "zh": "要删除 {name} 及其文件（{size}）吗？[y/N]",
    },
    "remove.cancelled": {
        "en": "Cancelled; nothing was removed.",
        "zh": "已取消；没有删除任何内容。",
    },
    "remove.err_need_yes": {
        "en": "there is no terminal to confirm the removal in",
        "zh": "没有可用于确认删除的终端",
    },
    "remove.hint_need_yes": {
        "en": "Add --yes to remove it without a question: qwenkit remove {name} --yes",
        "zh": "加上 --yes 即可不经询问直接删除：qwenkit remove {name} --yes。",
    },
    "library.rolling_back": {
        "en": "the server did not answer for every model: starting it again as it was",
        "zh": "服务未能为每个模型作答：正在按原样重新启动",
    },
    "library.err_is_default": {
        "en": "{name} is this home's default model",
        "zh": "{name} 是本安装目录的默认模型",
    },
    "library.hint_is_default": {
        "en": "run `qwenkit install` to upgrade it",
        "zh": "运行 `qwenkit install` 升级它。",
    },
    "library.err_remove_default": {
        "en": "{name} is the default model and cannot be removed on its own",
        "zh": "{name} 是默认模型，不能单独删除",
    },
    "library.hint_remove_default": {
        "en": "make another model the default first (qwenkit install --default MODEL), or run qwenkit uninstall",
        "zh": "请先将其他模型设为默认（qwenkit install --default MODEL），或运行 qwenkit uninstall。",
    },
    "library.err_unknown": {
        "en": "no installed model is named {name} (installed: {names})",
        "zh": "没有名为 {name} 的已安装模型（已安装：{names}）",
    },
    "library.hint_models": {
        "en": "qwenkit status lists the installed models",
        "zh": "运行 qwenkit status 查看已安装的模型。",
    },
    "library.hint_remove": {
        "en": "remove one of them: qwenkit remove NAME",
        "zh": "请删除其中一个：qwenkit remove NAME。",
    },
    "library.err_server_options": {
        "en": "--host, --port and --ctx change the default model's server, not a model added beside it",
        "zh": "--host、--port 和 --ctx 作用于默认模型的服务，不适用于添加到旁边的模型",
    },
    "library.hint_server_options": {
        "en": "run qwenkit install with those options and no MODEL, then add the model",
        "zh": "请先不带 MODEL 运行 qwenkit install 并指定这些选项，再添加模型。",
    },
    "library.err_selftest": {
        "en": "{name} could not serve on this machine, tried alone: {why}; nothing was changed",
        "zh": "{name} 单独试运行失败：{why}；未做任何更改",
    },
    "library.hint_selftest": {
        "en": "its log: {log}",
        "zh": "日志：{log}。",
    },
    "preset.bad_value": {
        "en": "{what} cannot be written into llama-server's preset file: {value}",
        "zh": "{what}无法写入 llama-server 的预设文件：{value}",
    },
    "preset.hint_value": {
        "en": "the file format ends a value at ';' or '#': move the model file to a folder without them",
        "zh": "该文件格式在 ';' 或 '#' 处截断取值：请把模型文件移到不含这些字符的文件夹。",
    },
    "preset.two_values": {
        "en": "flag {flag} has {n} values; a preset line holds one",
        "zh": "参数 {flag} 有 {n} 个值；预设文件的一行只能写一个",
    },
    "preset.bad_name": {
        "en": "model name {name} cannot be a section of llama-server's preset file",
        "zh": "模型名称 {name} 不能用作 llama-server 预设文件的节名",
    },
    "preset.hint_name": {
        "en": "names may not hold [ ] : ; # = or edge spaces",
        "zh": "名称中不能含有 [ ] : ; # = 或首尾空格。",
    },
    "preset.same_name": {
        "en": "two models are named {name}",
        "zh": "有两个模型都叫 {name}",
    },
    "preset.what_path": {"en": "a model path", "zh": "模型路径"},
    "preset.what_flag": {"en": "a flag", "zh": "参数"},
    "models_check.err_no_answer": {
        "en": "model {name} gave no answer through the endpoint",
        "zh": "模型 {name} 未通过服务地址给出回答",
    },
    "models_check.err_no_vector": {
        "en": "model {name} returned no embedding",
        "zh": "模型 {name} 未返回向量",
    },
    "status.line_models": {
        "en": "models     {count} behind the endpoint, up to {loaded} loaded at once; a request chooses one with "
              "\"model\" (none named: {default})",
        "zh": "模型列表   共 {count} 个模型使用同一服务地址，最多同时加载 {loaded} 个；请求用 \"model\" 选择"
              "（未指定时为 {default}）",
    },
    "status.col_name": {"en": "name", "zh": "名称"},
    "status.col_kind": {"en": "for", "zh": "用途"},
    "status.col_quant": {"en": "quant", "zh": "量化"},
    "status.col_ctx": {"en": "tokens/request", "zh": "每请求 token"},
    "status.col_state": {"en": "state", "zh": "状态"},
    "status.kind_chat": {"en": "chat", "zh": "对话"},
    "status.kind_embedding": {"en": "embeddings", "zh": "向量嵌入"},
    "status.kind_vision": {"en": "chat + images", "zh": "对话 + 图像"},
    "status.model_default": {"en": " (default)", "zh": "（默认）"},
    "status.model_loaded": {"en": "loaded", "zh": "已加载"},
    "status.model_loading": {"en": "loading", "zh": "加载中"},
    "status.model_unloaded": {"en": "not loaded", "zh": "未加载"},
    "models.role_embedding": {"en": " - embeddings (RAG)", "zh": " - 向量嵌入（RAG）"},
    "models.installed_default": {"en": " - installed, default", "zh": " - 已安装（默认）"},
    "models.installed_beside": {"en": " - installed", "zh": " - 已安装"},
    "library.err_embedding_default": {
        "en": "{name} is an embedding model: it serves beside a chat model, not as the default",
        "zh": "{name} 是向量嵌入模型：它在对话模型旁提供服务，不能作为默认模型",
    },
    "library.hint_embedding_default": {
        "en": "install a chat model first (qwenkit install), then qwenkit install {name}",
        "zh": "请先安装一个对话模型（qwenkit install），再运行 qwenkit install {name}。",
    },
    "plan.topic_embeddings": {"en": "embeddings", "zh": "向量嵌入"},
    "library.reason_embed_ctx": {
        "en": "context {ctx} tokens: the longest input one embedding takes (Qwen3-Embedding's card serves 8,192); "
              "its KV cache takes {kv} MiB.",
        "zh": "上下文 {ctx} token：单次向量嵌入可接受的最长输入（Qwen3-Embedding 模型卡为 8192）；"
              "其 KV 缓存占 {kv} MiB。",
    },
    "library.reason_embeddings": {
        "en": "an embedding model ({pooling} pooling): served at /v1/embeddings beside a chat model "
              "(qwenkit install MODEL), no prompt cache, batch {batch} / micro-batch {ubatch}",
        "zh": "向量嵌入模型（{pooling} 池化）：在对话模型旁通过 /v1/embeddings 提供服务（qwenkit install MODEL），"
              "不使用提示缓存，批大小 {batch} / 微批 {ubatch}",
    },
}
