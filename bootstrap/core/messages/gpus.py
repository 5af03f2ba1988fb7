"""Messages about AMD and Intel GPUs (found in sysfs or the Windows registry, then as the engine lists them) and
about a self-test that got an answer it did not like (``engine_selftest``)."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    # -- doctor: one GPU each ------------------------------------------------------------------------------------
    "gpus.doctor_vram": {
        "en": "{name}: {total} GiB VRAM ({free} GiB free)",
        "zh": "{name}：显存 {total} GiB（可用 {free} GiB）",
    },
    "gpus.doctor_vram_nofree": {
        "en": "{name}: {total} GiB VRAM (how much is free: once the engine lists it)",
        "zh": "{name}：显存 {total} GiB（可用多少：安装推理引擎后得知）",
    },
    "gpus.doctor_vram_unknown": {
        "en": "{name}: the driver does not report its VRAM (known once the engine lists it)",
        "zh": "{name}：驱动未报告显存大小（安装推理引擎后得知）",
    },
    "gpus.doctor_integrated": {
        "en": "{name}: integrated GPU sharing the RAM ({reserved} GiB reserved for it)",
        "zh": "{name}：集成显卡，与内存共享（为其保留 {reserved} GiB）",
    },
    "gpus.doctor_integrated_shared": {
        "en": "{name}: integrated GPU sharing the RAM",
        "zh": "{name}：集成显卡，与内存共享",
    },
    "gpus.doctor_engine": {
        "en": "{text}, {device} in llama-server",
        "zh": "{text}，在 llama-server 中为 {device}",
    },
    # -- which engine build: an integrated GPU ----------------------------------------------------------------------
    "gpus.variant_integrated": {
        "en": "{name} is an integrated GPU: it reads the same RAM as the CPU, so decoding, which reads every weight "
              "from that RAM, gains little, and llama.cpp's Vulkan backend is least reliable there; the CPU build "
              "is used.",
        "zh": "{name} 是集成显卡：它与 CPU 读取同一块内存，而生成时每个词元都要从这块内存读取全部权重，"
              "用它收益很小，且 llama.cpp 的 Vulkan 后端在集成显卡上最不稳定；因此使用 CPU 构建。",
    },
    "gpus.warn_reserved": {
        "en": "{name} keeps {reserved} GiB of RAM reserved for itself (the BIOS UMA frame buffer): the CPU build "
              "cannot use that memory.",
        "zh": "{name} 为自己保留了 {reserved} GiB 内存（BIOS 中的 UMA 帧缓冲）：CPU 构建无法使用这部分内存。",
    },
    "gpus.hint_reserved": {
        "en": "Set the UMA frame buffer size to its smallest value in the BIOS to give that memory to the model, "
              "then rerun.",
        "zh": "在 BIOS 中把 UMA 帧缓冲大小设为最小值，把这部分内存留给模型，然后重新运行。",
    },
    # -- the engine's own view (--list-devices) -------------------------------------------------------------------
    "gpus.engine_sees": {
        "en": "llama-server uses {device}: {name}, {total} GiB ({free} GiB free).",
        "zh": "llama-server 使用 {device}：{name}，{total} GiB（可用 {free} GiB）。",
    },
    "gpus.engine_missing": {
        "en": "llama-server does not see {name}: the plan no longer counts on it.",
        "zh": "llama-server 未识别到 {name}：规划不再使用它。",
    },
    "gpus.engine_replan": {
        "en": "The GPU as llama-server reports it differs from what was detected; the plan follows llama-server.",
        "zh": "llama-server 报告的显卡与检测结果不同；规划以 llama-server 为准。",
    },
    # -- the self-test: an answer, not a crash ------------------------------------------------------------------
    "failure.http_error": {
        "en": "{who} is running but answered the test request with HTTP {status}: {detail}",
        "zh": "{who} 正在运行，但对测试请求返回了 HTTP {status}：{detail}",
    },
    "failure.hint_http_error": {
        "en": "The server did not crash: it refused a one-token request on a model every working build answers. "
              "See the log {log}.",
        "zh": "服务器并未崩溃：它拒绝了一个单词元请求，而任何正常的构建都能回答这个模型。请查看日志 {log}。",
    },
    "failure.no_answer": {
        "en": "{who} kept running but did not answer: {detail}",
        "zh": "{who} 仍在运行，但没有作答：{detail}",
    },
    "failure.hint_no_answer": {
        "en": "The self-test stopped it. See the log {log}.",
        "zh": "自检已将其停止。请查看日志 {log}。",
    },
    "failure.stopped_status": {
        "en": "{who} stopped ({status}): {detail}",
        "zh": "{who} 已停止（{status}）：{detail}",
    },
    "failure.exit_code": {
        "en": "exit status {code}",
        "zh": "退出码 {code}",
    },
    "failure.exit_signal": {
        "en": "killed by {signal}",
        "zh": "被 {signal} 终止",
    },
    "failure.selftest_no_token": {
        "en": "the answer carried no token",
        "zh": "回答中没有词元",
    },
}
