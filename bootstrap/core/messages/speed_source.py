"""Messages about where a speed prediction comes from: this machine's measurement or the published-run constants."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "speed_source.measured_here": {
        "en": "Predicted from the engine's own measurement on the machine ({when}).",
        "zh": "依据推理引擎在该机器上的实测预测（{when}）。",
    },
    "speed_source.published": {
        "en": "Estimated from published runs on other machines: nothing was measured on this one.",
        "zh": "按其他机器的公开测试结果估算：未在这台机器上实测。",
    },
    "speed_source.published_will_measure": {
        "en": "Estimated from published runs for now: the engine measures this machine before the model download "
              "(a few seconds) and the prediction follows that.",
        "zh": "暂按公开测试结果估算：下载模型前，引擎会在本机实测几秒钟，预测随之更新。",
    },
    "speed_source.measuring": {
        "en": "Measuring this machine's speed with the engine (at most {seconds} s)...",
        "zh": "正在用推理引擎实测本机速度（最多 {seconds} 秒）……",
    },
    "speed_source.measured": {
        "en": "Measured in {seconds} s: about {tps} tokens/s expected here, likely {low}-{high} (the published-run "
              "estimate was about {before}); the speed measured after the install is the one to go by.",
        "zh": "实测用时 {seconds} 秒：预计本机约 {tps} token/秒，大致在 {low}–{high} 之间（按公开测试结果估算约 "
              "{before}）；请以安装后的实测速度为准。",
    },
    "speed_source.busy": {
        "en": "Other programs kept {percent}% of the CPU busy while it measured: the expected speed may be several "
              "times too low.",
        "zh": "实测期间其他程序占用了 {percent}% 的 CPU：预计速度可能低了好几倍。",
    },
    "speed_source.not_measured": {
        "en": "Could not measure this machine's speed (log: {log}); the estimate from published runs stays.",
        "zh": "无法实测本机速度（日志：{log}）；继续使用按公开测试结果的估算。",
    },
}
