"""Messages of the hardware report (``qwenkit doctor``): check names, verdicts, reasons and hints."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    # table
    "doctor.title": {"en": "QwenClientKit doctor {version}: this machine",
                     "zh": "QwenClientKit 体检 {version}：本机情况"},
    "doctor.col_check": {"en": "check", "zh": "项目"},
    "doctor.col_verdict": {"en": "verdict", "zh": "结论"},
    "doctor.col_detail": {"en": "details", "zh": "详情"},
    "doctor.verdict_ok": {"en": "ok", "zh": "正常"},
    "doctor.verdict_warn": {"en": "WARN", "zh": "警告"},
    "doctor.verdict_fail": {"en": "FAIL", "zh": "失败"},
    "doctor.check_os": {"en": "system", "zh": "系统"},
    "doctor.check_cpu": {"en": "CPU", "zh": "处理器"},
    "doctor.check_ram": {"en": "memory", "zh": "内存"},
    "doctor.check_disk": {"en": "disk", "zh": "磁盘"},
    "doctor.check_gpu": {"en": "GPU", "zh": "显卡"},
    "doctor.check_engine": {"en": "engine", "zh": "推理引擎"},
    "doctor.check_python": {"en": "Python", "zh": "Python 解释器"},
    "doctor.check_network": {"en": "network", "zh": "网络"},
    "doctor.summary": {"en": "Verdicts: {ok} ok, {warn} warn, {fail} fail. Exit code is 0: the report is the result.",
                       "zh": "{ok} 项正常，{warn} 项警告，{fail} 项失败。退出码为 0：本报告即结果。"},
    "doctor.elapsed": {"en": "Checked in {seconds} s.", "zh": "检查耗时 {seconds} 秒。"},
    # reasons and hints
    "doctor.os_reason": {"en": "{system} {release} ({machine})", "zh": "{system} {release}（架构 {machine}）"},
    "doctor.os_reason_container": {"en": "{base}, inside a container", "zh": "{base}，运行在容器中"},
    "doctor.os_reason_wsl": {"en": "{base}, inside WSL", "zh": "{base}，运行在 WSL 中"},
    "doctor.os_hint_unsupported": {"en": "Use Windows 10/11, Linux (x86-64) or macOS.",
                                   "zh": "请使用 Windows 10/11、Linux（x86-64）或 macOS。"},
    "doctor.os_hint_container": {"en": "No service manager here: install with --no-service and use the start script.",
                                 "zh": "容器中没有服务管理器：请使用 --no-service 安装，并用启动脚本运行。"},
    "doctor.os_hint_wsl": {"en": "The service needs systemd in WSL; otherwise use the start script.",
                           "zh": "WSL 中的后台服务需要启用 systemd，否则请使用启动脚本。"},
    "doctor.cpu_reason": {"en": "{brand}, {physical} cores / {logical} threads, {flags}",
                          "zh": "{brand}，{physical} 核 / {logical} 线程，指令集 {flags}"},
    "doctor.cpu_hint_no_avx2": {"en": "No AVX2: generation on the CPU will be slow; prefer GPU offload.",
                                "zh": "不支持 AVX2：CPU 推理会很慢，建议使用显卡加速。"},
    "doctor.ram_reason": {"en": "{total} GiB total, {available} GiB available",
                          "zh": "共 {total} GiB，可用 {available} GiB"},
    "doctor.ram_hint_low": {"en": "At least {minimum} GiB of RAM is needed to run a Qwen model.",
                            "zh": "运行 Qwen 模型至少需要 {minimum} GiB 内存。"},
    "doctor.disk_reason": {"en": "{free} GiB free at {path}", "zh": "{path} 可用 {free} GiB"},
    "doctor.disk_hint_low": {"en": "The default model needs {need} GiB: free space, choose --home on another "
                                   "drive, or pick a smaller quant.",
                             "zh": "默认模型需要 {need} GiB：请清理空间、用 --home 选择其他磁盘，"
                                   "或选择更小的量化版本。"},
    "doctor.gpu_none": {"en": "No NVIDIA or Apple GPU found: the model runs on the CPU. Other GPUs (AMD, Intel) "
                              "are listed once the engine is installed.",
                        "zh": "未发现 NVIDIA 或 Apple 显卡：模型将在 CPU 上运行。其他显卡（AMD、Intel）"
                              "会在安装推理引擎后识别。"},
    "doctor.gpu_hint_none": {"en": "With an NVIDIA GPU, install its driver (550 or newer) and rerun doctor.",
                             "zh": "如有 NVIDIA 显卡，请安装驱动（550 或更新版本）后重新运行体检。"},
    "doctor.gpu_nvidia": {"en": "{name}: {total} GiB VRAM ({free} GiB free), driver {driver}, CUDA {cuda}, "
                                "compute {cc}",
                          "zh": "{name}：显存 {total} GiB（可用 {free} GiB），驱动 {driver}，CUDA {cuda}，"
                                "计算能力 {cc}"},
    "doctor.gpu_unified": {"en": "{name}: {total} GiB unified memory", "zh": "{name}：统一内存 {total} GiB"},
    "doctor.gpu_other": {"en": "{name} ({vendor}): details once the engine is installed",
                         "zh": "{name}（{vendor}）：安装推理引擎后显示详情"},
    "doctor.engine_reason": {"en": "llama.cpp {variant}: {why}", "zh": "llama.cpp 构建 {variant}：{why}"},
    "doctor.engine_hint_driver": {"en": "Update the NVIDIA driver to {minimum} or newer (580+ for CUDA 13), then "
                                        "rerun; until then the Vulkan build is used.",
                                  "zh": "请将 NVIDIA 驱动升级到 {minimum} 或更新版本（CUDA 13 需 580+）后重新运行；"
                                        "在此之前使用 Vulkan 构建。"},
    "doctor.engine_hint_jit": {"en": "Expect a slow first start while the GPU kernels compile; later starts are fast.",
                               "zh": "首次启动会较慢（正在编译显卡内核），之后的启动会很快。"},
    "doctor.python_none": {"en": "No Python 3.10-3.13 found.", "zh": "未找到 Python 3.10-3.13 解释器。"},
    "doctor.python_hint_none": {"en": "Install Python 3.12 (python.org or your package manager) for the examples "
                                      "venv.",
                                "zh": "请安装 Python 3.12（python.org 或系统包管理器），用于示例运行环境。"},
    "doctor.python_more": {"en": " and {count} more", "zh": " 等，另有 {count} 个"},
    "doctor.net_direct": {"en": "no proxy set.", "zh": "未设置代理。"},
    "doctor.net_proxy": {"en": "proxy {proxy}.", "zh": "代理 {proxy}。"},
    "doctor.net_ca": {"en": "CA bundle {path}.", "zh": "CA 证书文件 {path}。"},
    "doctor.net_truststore": {"en": "TLS verified against the OS certificate store.",
                              "zh": "TLS 使用操作系统证书库验证。"},
    "doctor.net_no_truststore": {"en": "The OS certificate store could not be loaded.",
                                 "zh": "无法加载操作系统证书库。"},
    "doctor.net_hint_ca_missing": {"en": "The CA bundle {path} does not exist: fix SSL_CERT_FILE/REQUESTS_CA_BUNDLE.",
                                   "zh": "CA 证书文件 {path} 不存在：请修正 SSL_CERT_FILE/REQUESTS_CA_BUNDLE。"},
    "doctor.net_hint_truststore": {"en": "Behind a TLS-inspecting proxy, set SSL_CERT_FILE to its CA bundle.",
                                   "zh": "如使用会解密 TLS 的代理，请把 SSL_CERT_FILE 设为其 CA 证书文件。"},
    "doctor.net_sources": {"en": "Sources: {list}.", "zh": "下载源：{list}。"},
    "doctor.reach_reachable": {"en": "{name} reachable ({ms} ms)", "zh": "{name} 可访问（{ms} 毫秒）"},
    "doctor.reach_dns": {"en": "{name} blocked (DNS lookup failed)", "zh": "{name} 不可达（域名解析失败）"},
    "doctor.reach_timeout": {"en": "{name} blocked (no answer in 3 s)", "zh": "{name} 不可达（3 秒内无应答）"},
    "doctor.reach_refused": {"en": "{name} blocked (connection refused)", "zh": "{name} 不可达（连接被拒绝）"},
    "doctor.reach_unreachable": {"en": "{name} blocked (no route)", "zh": "{name} 不可达（没有路由）"},
    "doctor.reach_tls": {"en": "{name} TLS intercepted (certificate verify failed)",
                         "zh": "{name} 的 TLS 被拦截（证书校验失败）"},
    "doctor.reach_error": {"en": "{name} failed", "zh": "{name} 出错"},
    "doctor.net_hint_no_source": {"en": "No download source answers: try --source modelscope, a mirror "
                                        "(QWENKIT_HF_MIRRORS or HF_ENDPOINT), a proxy (HTTPS_PROXY) or an offline "
                                        "bundle (--bundle).",
                                  "zh": "没有可访问的下载源：可尝试 --source modelscope、镜像（QWENKIT_HF_MIRRORS 或 "
                                        "HF_ENDPOINT）、代理（HTTPS_PROXY）或离线安装包（--bundle）。"},
    # engine variant reasons
    "doctor.variant_win_cuda13": {"en": "NVIDIA driver {driver} supports the CUDA 13 build.",
                                  "zh": "NVIDIA 驱动 {driver} 支持 CUDA 13 构建。"},
    "doctor.variant_win_cuda12": {"en": "NVIDIA driver {driver} supports the CUDA 12.4 build.",
                                  "zh": "NVIDIA 驱动 {driver} 支持 CUDA 12.4 构建。"},
    "doctor.variant_win_vulkan_old": {"en": "NVIDIA driver {driver} is too old for the CUDA builds; using Vulkan.",
                                      "zh": "NVIDIA 驱动 {driver} 过旧，无法使用 CUDA 构建；改用 Vulkan。"},
    "doctor.variant_win_vulkan_nodriver": {"en": "NVIDIA driver version unknown; using Vulkan.",
                                           "zh": "无法获知 NVIDIA 驱动版本；改用 Vulkan。"},
    "doctor.variant_driver_old": {"en": "WARNING: driver {driver} is older than {minimum}: a CUDA build would fall "
                                        "back to the CPU without saying so. Minimum driver for CUDA: {minimum}.",
                                  "zh": "警告：驱动 {driver} 低于 {minimum}：CUDA 构建会在不提示的情况下退回 CPU 运行。"
                                        "CUDA 所需最低驱动版本：{minimum}。"},
    "doctor.variant_driver_unknown": {"en": "WARNING: the NVIDIA driver version could not be read; CUDA needs "
                                            "driver {minimum} or newer.",
                                      "zh": "警告：无法读取 NVIDIA 驱动版本；CUDA 需要 {minimum} 或更新版本的驱动。"},
    "doctor.variant_jit": {"en": "{name} (compute {cc}) has no prebuilt kernels: the first start compiles them "
                                 "(can take minutes).",
                           "zh": "{name}（计算能力 {cc}）没有预编译内核：首次启动时需要编译（可能需要数分钟）。"},
    "doctor.variant_linux_nvidia": {"en": "{name} on Linux: upstream ships no Linux CUDA build, so the Vulkan build "
                                          "is used (a CUDA build from source is possible with a CUDA toolkit).",
                                    "zh": "Linux 上的 {name}：官方没有 Linux CUDA 预编译包，因此使用 Vulkan 构建"
                                          "（装有 CUDA 工具包时可自行从源码编译 CUDA 构建）。"},
    "doctor.variant_vulkan_other": {"en": "{name}: Vulkan build.", "zh": "{name}：使用 Vulkan 构建。"},
    "doctor.variant_cpu": {"en": "no GPU for the engine: CPU build.", "zh": "没有可用显卡：使用 CPU 构建。"},
    "doctor.variant_metal": {"en": "Apple Silicon: Metal build.", "zh": "Apple 芯片：使用 Metal 构建。"},
    "doctor.variant_macos_x64": {"en": "Intel Mac: CPU build.", "zh": "Intel Mac：使用 CPU 构建。"},
    "doctor.variant_unsupported": {"en": "No llama.cpp build for {system} on {arch}.",
                                   "zh": "没有适用于 {system}（{arch}）的 llama.cpp 构建。"},
    "doctor.hint_variant_unsupported": {"en": "Supported: Windows x64, Linux x86-64, macOS (Apple Silicon or Intel).",
                                        "zh": "支持的平台：Windows x64、Linux x86-64、macOS（Apple 芯片或 Intel）。"},
    # profile file errors (--hardware FILE.json)
    "doctor.err_read": {"en": "Cannot read hardware profile {path}: {detail}",
                        "zh": "无法读取硬件描述文件 {path}：{detail}"},
    "doctor.err_field": {"en": "invalid hardware profile field '{field}': {detail}",
                         "zh": "硬件描述字段 '{field}' 无效：{detail}"},
    "doctor.err_missing": {"en": "missing", "zh": "缺失"},
    "doctor.err_type": {"en": "expected {expected}", "zh": "应为 {expected}"},
    "doctor.err_range": {"en": "must be at least {minimum}, got {value}", "zh": "不能小于 {minimum}，实际为 {value}"},
    "doctor.err_choice": {"en": "must be one of {allowed}, got '{value}'",
                          "zh": "必须是 {allowed} 之一，实际为 '{value}'"},
    "doctor.err_schema": {"en": "schema {found} is not supported (expected {expected})",
                          "zh": "不支持的格式版本 {found}（应为 {expected}）"},
    "doctor.hint_profile": {"en": "Create the file with 'qwenkit doctor --json > FILE.json' on the target machine.",
                            "zh": "请在目标机器上运行 'qwenkit doctor --json > FILE.json' 生成该文件。"},
}
