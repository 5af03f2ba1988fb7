"""Messages of the tune stage (llama.cpp's fit vs. the plan) and the verify stage (health, chat, report)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    # tune
    "tune.no_tool": {
        "en": "kept the plan: this engine has no llama-fit-params",
        "zh": "沿用规划：此引擎没有 llama-fit-params",
    },
    "tune.tool_failed": {
        "en": "kept the plan: llama-fit-params failed ({error})",
        "zh": "沿用规划：llama-fit-params 运行失败（{error}）",
    },
    "tune.tool_silent": {
        "en": "it exited without a reason {tries} times in a row (llama.cpp can lose its last log lines at exit)",
        "zh": "连续 {tries} 次退出且未给出原因（llama.cpp 退出时可能丢失最后几行日志）",
    },
    "tune.model_unreadable": {
        "en": "kept the plan: llama.cpp's fit was not run: {error}",
        "zh": "沿用规划：未运行 llama.cpp 的 fit：{error}",
    },
    "tune.tool_timeout": {
        "en": "no answer within {seconds} s",
        "zh": "{seconds} 秒内无响应",
    },
    "tune.keep_fits": {
        "en": "kept the plan: llama.cpp projects {used} MiB on {device}, within {free} MiB free minus its "
              "{margin} MiB margin",
        "zh": "沿用规划：llama.cpp 预计 {device} 使用 {used} MiB，未超出可用 {free} MiB 减去 {margin} MiB 余量",
    },
    "tune.keep_fits_host": {
        "en": "kept the plan: llama.cpp projects {used} MiB of host memory, within {free} MiB of RAM minus its "
              "{margin} MiB margin",
        "zh": "沿用规划：llama.cpp 预计使用 {used} MiB 主机内存，未超出内存总量 {free} MiB 减去 {margin} MiB 余量",
    },
    "tune.keep_unknown_free": {
        "en": "kept the plan: the free memory of llama.cpp's devices is not known to compare with",
        "zh": "沿用规划：无法得知 llama.cpp 所列设备的可用内存，无从比较",
    },
    "tune.keep_cpu_only": {
        "en": "kept the plan: llama.cpp projects {used} MiB of host memory, over {free} MiB total minus its "
              "{margin} MiB margin, and without a GPU its fit cannot move anything elsewhere",
        "zh": "沿用规划：llama.cpp 预计使用 {used} MiB 主机内存，超出总量 {free} MiB 减去 {margin} MiB 余量；"
              "没有 GPU，其自动适配也无法转移任何部分",
    },
    "tune.fit_drops_mtp": {
        "en": "MTP drafting left off: llama.cpp's placement does not count the MTP head.",
        "zh": "不启用 MTP 起草：llama.cpp 的放置方案未计入 MTP 头的显存。",
    },
    "tune.adopt_fit": {
        "en": "adopted llama.cpp's placement {fit}: ours projects {used} MiB on {device}, over {free} MiB free "
              "minus its {margin} MiB margin",
        "zh": "采用 llama.cpp 的放置方案 {fit}：我们的方案预计 {device} 使用 {used} MiB，超出可用 {free} MiB "
              "减去 {margin} MiB 余量",
    },
    "tune.adopt_fit_ctx": {
        "en": "adopted llama.cpp's placement {fit} and its context {ctx} (plan: {plan_ctx}): ours projects {used} "
              "MiB on {device}, over {free} MiB free minus its {margin} MiB margin",
        "zh": "采用 llama.cpp 的放置方案 {fit} 及其上下文 {ctx}（规划为 {plan_ctx}）：我们的方案预计 {device} "
              "使用 {used} MiB，超出可用 {free} MiB 减去 {margin} MiB 余量",
    },
    "tune.no_repack_amx": {
        "en": "--no-repack: this CPU has AMX, whose repack path can crash llama.cpp at warm-up (SIGILL) and takes "
              "extra RAM",
        "zh": "--no-repack：此 CPU 支持 AMX，其权重重排路径可能在预热时使 llama.cpp 崩溃（SIGILL），且额外占用内存",
    },
    # verify
    "verify.err_health_timeout": {
        "en": "the server at {url} was not ready within {seconds} s ({last})",
        "zh": "{url} 上的服务在 {seconds} 秒内未就绪（{last}）",
    },
    "verify.hint_health_timeout": {
        "en": "A large model on a slow disk can take minutes to load: check `qwenkit status` again later, or read "
              "the server log.",
        "zh": "大模型在慢速磁盘上可能需要数分钟加载：稍后再运行 `qwenkit status`，或查看服务日志。",
    },
    "verify.no_answer": {"en": "no answer", "zh": "无响应"},
    "verify.loading_started": {
        "en": "Waiting for the server at {url} to load the model (this can take minutes)...",
        "zh": "正在等待 {url} 上的服务加载模型（可能需要几分钟）……",
    },
    "verify.loading": {"en": "loading the model... {seconds} s", "zh": "正在加载模型…… {seconds} 秒"},
    "verify.loading_detail": {
        "en": "loading the model... {seconds} s ({detail})",
        "zh": "正在加载模型…… {seconds} 秒（{detail}）",
    },
    "verify.err_no_key_check": {
        "en": "the server accepts requests without the API key (status {status})",
        "zh": "服务在没有 API 密钥时仍接受请求（状态码 {status}）",
    },
    "verify.err_no_key_file": {
        "en": "the server was not started with this install's API key file (--api-key-file): it would answer "
              "requests without the key",
        "zh": "服务启动时没有使用本安装的 API 密钥文件（--api-key-file）：它会接受不带密钥的请求",
    },
    "verify.hint_no_key_check": {
        "en": "Start it with --api-key-file pointing at the key file; rerun the install to rewrite the start script.",
        "zh": "请使用指向密钥文件的 --api-key-file 启动；重新运行安装以重写启动脚本。",
    },
    "verify.err_status": {
        "en": "{what} answered HTTP {status}: {message}",
        "zh": "{what} 返回 HTTP {status}：{message}",
    },
    "verify.err_request": {
        "en": "{what} failed: {detail}",
        "zh": "{what} 失败：{detail}",
    },
    "verify.err_alias": {
        "en": "the server does not list the model '{alias}' (it lists: {listed})",
        "zh": "服务未列出模型 '{alias}'（已列出：{listed}）",
    },
    "verify.err_stream": {
        "en": "the streamed reply ended without 'data: [DONE]' or without any token",
        "zh": "流式回复未以 'data: [DONE]' 结束，或没有任何 token",
    },
    "verify.hint_server": {
        "en": "Read the server log; rerun the install to repair it.",
        "zh": "请查看服务日志；重新运行安装可修复。",
    },
    "verify.report_title": {"en": "The server answers:", "zh": "服务已正常响应："},
    "verify.report_endpoint": {"en": "  endpoint     {url}", "zh": "  接口地址     {url}"},
    "verify.report_model": {"en": "  model        {model}", "zh": "  模型名称     {model}"},
    "verify.report_key": {"en": "  API key in   {path}", "zh": "  API 密钥文件 {path}"},
    "verify.report_speed": {
        "en": "  first token  {first:.2f} s, {tps:.1f} tokens/s",
        "zh": "  首个 token   {first:.2f} 秒 · 每秒 {tps:.1f} 个 token",
    },
    "verify.report_reply": {"en": "  reply        {reply}", "zh": "  回复内容     {reply}"},
    "verify.report_curl": {"en": "Try it with curl:", "zh": "用 curl 试一试："},
    "verify.report_python": {"en": "Or from Python (OpenAI SDK):", "zh": "或在 Python 中使用（OpenAI SDK）："},
    "verify.report_agent": {"en": "An agent example (tools, streaming) in the install's Python:",
                            "zh": "智能体示例（工具调用、流式输出），用安装目录中的 Python 运行："},
    "verify.thinking_on": {"en": "Thinking: on by default (the model reasons before it answers: slower, better on "
                                 "hard problems).",
                           "zh": "思考模式：默认开启（模型先推理再回答：更慢，但难题上更好）。"},
    "verify.thinking_off": {"en": "Thinking: off by default (direct, faster answers).",
                            "zh": "思考模式：默认关闭（直接回答，更快）。"},
    "verify.thinking_per_request": {
        "en": "Per request (OpenAI SDK): extra_body={{\"chat_template_kwargs\": {{\"enable_thinking\": True}}}} (or "
              "False); the reasoning arrives in message.reasoning_content (streamed: delta.reasoning_content), the "
              "answer in content.",
        "zh": "按请求切换（OpenAI SDK）：'extra_body={{\"chat_template_kwargs\": {{\"enable_thinking\": True}}}}'"
              "（或 'False'）；推理过程在 'message.reasoning_content' 中（流式：'delta.reasoning_content'），"
              "回答在 'content' 中。",
    },
    # Comments of the Python snippet (templates/snippet-python.txt.j2): read by the user, so in their language.
    "verify.note_save_as": {"en": "Save as hello.py and run it with the install's Python (it has the OpenAI SDK): ",
                            "zh": "保存为 hello.py，并用安装目录中的 Python 运行（已装好 OpenAI SDK）："},
    "verify.note_thinking": {"en": "Thinking per request: ", "zh": "按请求开启思考模式："},
    "verify.note_reasoning": {"en": "the reasoning then arrives in reply.choices[0].message.reasoning_content, the "
                                    "answer in .content.",
                              "zh": "推理过程随后在 reply.choices[0].message.reasoning_content 中，"
                                    "回答在 .content 中。"},
    "verify.thinking_default": {"en": "Change the server's default: qwenkit install --thinking on|off.",
                                "zh": "修改服务默认值：'qwenkit install --thinking on|off'。"},
    # the speed measurement at verify (verify/speed_check.py)
    "speed.decode": {"en": "  generation   measured {measured} tokens/s, {predicted}",
                     "zh": "  生成速度     实测每秒 {measured} 个 token，{predicted}"},
    "speed.prompt": {"en": "  prompt       measured {measured} tokens/s ({tokens}-token prompt), {predicted}",
                     "zh": "  提示词处理   实测每秒 {measured} 个 token（{tokens} 个 token 的提示词），{predicted}"},
    "speed.predicted": {"en": "estimated about {value} ({low}-{high})", "zh": "估算约 {value}（{low}–{high}）"},
    "speed.far_above": {
        "en": "  note         {factor} times the estimate: the machine was busier while it was estimated; go by "
              "the measured figure (other programs' load moves it too)",
        "zh": "  说明         实测是估算的 {factor} 倍：估算时本机更繁忙；请以实测值为准（其他程序的负载也会影响它）",
    },
    "speed.when_unknown": {"en": "the last install", "zh": "上次安装"},
    "status.speed_then": {
        "en": "speed      as measured at {when} (the machine's load then; 'qwenkit install --verify' measures anew):",
        "zh": "速度       {when} 时的实测值（反映当时的负载；'qwenkit install --verify' 会重新测量）：",
    },
    "speed.no_prediction": {"en": "no prediction", "zh": "无预测值"},
    "speed.spec_ab": {
        "en": "  speculative  {flags}: on {on} tokens/s (acceptance {acceptance}), off {off} tokens/s: {kept}",
        "zh": "  推测解码     {flags}：开启每秒 {on} 个 token（接受率 {acceptance}），关闭每秒 {off} 个 token：{kept}",
    },
    "speed.spec_failed": {
        "en": "  speculative  {flags}: failed the measurement ({reason}); off {off} tokens/s: turned off",
        "zh": "  推测解码     {flags}：测速失败（{reason}）；关闭时每秒 {off} 个 token：已关闭",
    },
    "speed.not_measured": {
        "en": "the speed could not be measured ({reason}); the server answers, so the install goes on",
        "zh": "未能测量速度（{reason}）；服务可正常响应，安装继续",
    },
    "speed.kept_on": {"en": "kept on", "zh": "保持开启"},
    "speed.kept_off": {"en": "turned off (the server now starts without these flags)",
                       "zh": "已关闭（服务启动时不再带这些参数）"},
    "speed.no_drafts": {"en": "no drafts", "zh": "未产生草稿"},
    "speed.slow": {
        "en": "the server generates {measured} tokens/s, far below the predicted {low} at the least; likely: {causes}",
        "zh": "服务实测每秒生成 {measured} 个 token，远低于预测下限 {low}；可能原因：{causes}",
    },
    "speed.cause_gpu_process": {
        "en": "another program holds GPU memory (see nvidia-smi), so part of the model runs elsewhere or waits",
        "zh": "另有程序占用显存（可用 nvidia-smi 查看），模型部分层只能放在别处或需等待",
    },
    "speed.cause_gpu_throttle": {
        "en": "the GPU is slowed by its power or temperature limit (check cooling and the power plan)",
        "zh": "显卡因功耗或温度限制而降频（请检查散热与电源计划）",
    },
    "speed.cause_cpu_busy": {
        "en": "other programs keep the CPU busy (close them and run qwenkit install again to measure anew)",
        "zh": "其他程序正占用 CPU（关闭后重新运行 qwenkit install 可重新测量）",
    },
    "speed.cause_cpu_slow_clock": {
        "en": "the CPU runs well below its rated clock: a power-saving plan or overheating (plug in the charger, "
              "choose a performance power plan)",
        "zh": "CPU 主频远低于额定值：节能模式或过热（请接通电源，选择高性能电源计划）",
    },
    "speed.cause_rpc": {
        "en": "every token crosses the network to the RPC workers, which the prediction does not count",
        "zh": "每个词元都要经网络传到 RPC 工作节点，预测未计入这部分开销",
    },
    "speed.cause_unknown": {
        "en": "nothing else seems to use this machine now; the prediction may be off for this hardware",
        "zh": "目前未发现其他程序占用本机；可能是预测值不适用于这台硬件",
    },
    # the browser chat page (verify/web_page.py)
    "verify.web_page": {"en": "Chat in a browser: {url}", "zh": "在浏览器中聊天：{url}"},
    "verify.web_key": {
        "en": "The page first shows 'Server Connection Error' (Access denied) until it has the key: click "
              "'Enter API Key' and paste the key from {path} (once per browser; later: Settings > General > API Key).",
        "zh": "在输入密钥之前，页面会显示红色的 'Server Connection Error'（'Access denied'）：点击 'Enter API Key'，"
              "粘贴 {path} 中的密钥（每个浏览器一次；之后可在 'Settings > General > API Key' 中修改）。",
    },
    "verify.web_missing": {"en": "No chat page in the browser: {reason}", "zh": "没有浏览器聊天页面：{reason}"},
    "verify.not_opening": {"en": "not opening the chat page: {reason}", "zh": "不打开聊天页面：{reason}"},
    "verify.web_none": {
        "en": "this llama-server build has no web page; use the API",
        "zh": "这个 llama-server 构建不带网页界面；请使用 API",
    },
    "verify.web_odd": {
        "en": "the server answered {status} ({kind}) at /, not a page; use the API",
        "zh": "服务器在 / 返回 {status}（{kind}），不是网页；请使用 API",
    },
    "verify.web_asset": {
        "en": "the page's file {path} answered {status}, so the page would stay blank; use the API",
        "zh": "页面文件 {path} 返回 {status}，页面将显示空白；请使用 API",
    },
    "verify.web_no_answer": {
        "en": "the server did not answer at / ({detail}); use the API",
        "zh": "服务器在 / 无响应（{detail}）；请使用 API",
    },
}
