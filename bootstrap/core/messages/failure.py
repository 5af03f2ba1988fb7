"""Messages for a llama-server that could not run (``engine_failure``), its self-test and the fallbacks taken."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "failure.illegal_instruction": {
        "en": "{who} cannot run on this processor: the build uses CPU instructions it lacks ({detail})",
        "zh": "{who} 无法在此处理器上运行：该构建使用了本处理器不支持的 CPU 指令（{detail}）",
    },
    "failure.hint_illegal_instruction": {
        "en": "No other engine build is left to try here; send 'qwenkit doctor' output and the log {log} "
              "with a report.",
        "zh": "此处已无其他引擎构建可试；报告问题时请附上 'qwenkit doctor' 的输出和日志 {log}。",
    },
    "failure.missing_library": {
        "en": "{who} cannot start: the library {detail} is missing",
        "zh": "{who} 无法启动：缺少库 {detail}",
    },
    "failure.hint_missing_library": {
        "en": "Install {library}, then rerun 'qwenkit install'.",
        "zh": "请安装{library}，然后重新运行 'qwenkit install'。",
    },
    "failure.lib_vulkan": {
        "en": "the Vulkan loader (Linux: the libvulkan1 or vulkan-loader package; Windows: a current GPU driver)",
        "zh": " Vulkan 加载器（Linux：libvulkan1 或 vulkan-loader 软件包；Windows：较新的显卡驱动）",
    },
    "failure.lib_driver": {
        "en": "the NVIDIA driver",
        "zh": " NVIDIA 显卡驱动",
    },
    "failure.lib_cudart": {
        "en": "the CUDA runtime of the CUDA build ('qwenkit install --verify' puts it back)",
        "zh": " CUDA 构建自带的 CUDA 运行库（'qwenkit install --verify' 会重新放置）",
    },
    "failure.lib_openmp": {
        "en": "the OpenMP runtime (Linux: libgomp1)",
        "zh": " OpenMP 运行库（Linux：libgomp1）",
    },
    "failure.lib_cxx": {
        "en": "the C++ runtime (Linux: libstdc++6; Windows: the Microsoft Visual C++ Redistributable)",
        "zh": " C++ 运行库（Linux：libstdc++6；Windows：Microsoft Visual C++ 可再发行组件）",
    },
    "failure.lib_other": {
        "en": "the package that provides {library}",
        "zh": "提供 {library} 的软件包",
    },
    "failure.gpu_init": {
        "en": "{who} could not start its GPU backend: {detail}",
        "zh": "{who} 无法启动 GPU 后端：{detail}",
    },
    "failure.hint_gpu_init": {
        "en": "Update the GPU driver and rerun 'qwenkit install'; log: {log}",
        "zh": "日志见 {log}；请更新显卡驱动后重新运行 'qwenkit install'。",
    },
    "failure.no_gpu_device": {
        "en": "no GPU device came up",
        "zh": "没有可用的 GPU 设备",
    },
    "failure.out_of_memory": {
        "en": "{who} ran out of memory on {device}: an allocation of {wanted} failed ({detail})",
        "zh": "{who} 在 {device} 上内存不足：申请 {wanted} 失败（{detail}）",
    },
    "failure.hint_out_of_memory": {
        "en": "Close programs that use a lot of memory and rerun, or plan a smaller context "
              "(qwenkit plan --ctx 8192); log: {log}",
        "zh": "日志见 {log}；请关闭占用大量内存的程序后重试，或规划更小的上下文（qwenkit plan --ctx 8192）。",
    },
    "failure.model_corrupt": {
        "en": "{who} could not load the model: the file is damaged or incomplete ({detail})",
        "zh": "{who} 无法加载模型：文件已损坏或不完整（{detail}）",
    },
    "failure.hint_model_corrupt": {
        "en": "Run 'qwenkit install --verify': it checks every file and downloads a damaged one again.",
        "zh": "请运行 'qwenkit install --verify'：它会校验每个文件并重新下载损坏的文件。",
    },
    "failure.model_unsupported": {
        "en": "{who} does not know the model architecture '{detail}'",
        "zh": "{who} 不支持模型架构 '{detail}'",
    },
    "failure.hint_model_unsupported": {
        "en": "This engine build is older than the model: choose another model (qwenkit models / plan) or update "
              "the kit.",
        "zh": "此引擎版本比该模型旧：请选择其他模型（qwenkit plan），或更新本工具。",
    },
    "failure.model_load": {
        "en": "{who} could not load the model: {detail}",
        "zh": "{who} 无法加载模型：{detail}",
    },
    "failure.hint_model_load": {
        "en": "Run 'qwenkit install --verify'; if it happens again, see the log {log}.",
        "zh": "请运行 'qwenkit install --verify'；如果再次出现，请查看日志 {log}。",
    },
    "failure.port_in_use": {
        "en": "{who} could not listen on its port: another program holds it ({detail})",
        "zh": "{who} 无法监听端口：该端口已被其他程序占用（{detail}）",
    },
    "failure.hint_port_in_use": {
        "en": "Choose another port with --port, or stop the program that uses it.",
        "zh": "请用 --port 换一个端口，或停止占用该端口的程序。",
    },
    "failure.crash": {
        "en": "{who} crashed ({signal}): {detail}",
        "zh": "{who} 崩溃（{signal}）：{detail}",
    },
    "failure.hint_crash": {
        "en": "Rerun 'qwenkit install'; if it crashes again, report it with the log {log}.",
        "zh": "请重新运行 'qwenkit install'；若再次崩溃，请附上日志 {log} 报告问题。",
    },
    "failure.unknown": {
        "en": "{who} stopped: {detail}",
        "zh": "{who} 已停止：{detail}",
    },
    "failure.not_started": {
        "en": "{who} never ran: the service manager reports no server process, and nothing was logged ({detail})",
        "zh": "{who} 从未运行：服务管理器报告没有服务器进程，也没有任何日志（{detail}）",
    },
    "failure.no_log": {
        "en": "{log} is empty",
        "zh": "{log} 为空",
    },
    "failure.no_log_file": {
        "en": "no log file was written",
        "zh": "没有写出日志文件",
    },
    "failure.hint_not_started": {
        "en": "Run 'qwenkit service status' to see what the service manager says; 'qwenkit install --no-service' "
              "runs the server with the start script instead.",
        "zh": "运行 'qwenkit service status' 查看服务管理器的说法；"
              "'qwenkit install --no-service' 改用启动脚本运行服务器。",
    },
    "failure.hint_unknown": {
        "en": "See the log {log}.",
        "zh": "请查看日志 {log}。",
    },
    "failure.who_server": {
        "en": "llama-server",
        "zh": "推理服务 llama-server",
    },
    "failure.who_build": {
        "en": "the {variant} build of llama-server",
        "zh": "llama-server 的 {variant} 构建",
    },
    # -- the self-test and what the installer does about a failure ------------------------------------------
    "failure.selftest_running": {
        "en": "Checking that the {variant} engine runs on this machine...",
        "zh": "正在检查 {variant} 引擎能否在本机运行……",
    },
    "failure.selftest_ok": {
        "en": "The {variant} engine runs here: it loaded a quantized test model and answered in {seconds:.1f} s.",
        "zh": "{variant} 引擎可在本机运行：已加载量化测试模型并在 {seconds:.1f} 秒内作答。",
    },
    "failure.selftest_no_answer": {
        "en": "no answer to a one-token request within {seconds} s",
        "zh": "{seconds} 秒内未响应单个词元的请求",
    },
    "failure.fallback": {
        "en": "Running on the {used} build: the {failed} build could not start here ({reason}).",
        "zh": "改用 {used} 构建运行：{failed} 构建无法在本机启动（{reason}）。",
    },
    "failure.oom_replan": {
        "en": "llama-server ran out of memory ({wanted} on {device}); starting it once more with {change}.",
        "zh": "llama-server 内存不足（{device} 上 {wanted}）；将以{change}再启动一次。",
    },
    "failure.change_ctx": {
        "en": "a context of {ctx} tokens instead of {old}",
        "zh": " {ctx} 个词元的上下文（原为 {old}）",
    },
    "failure.change_gpu": {
        "en": "less on the GPU ({placement})",
        "zh": "更少的 GPU 占用（{placement}）",
    },
    "failure.status_last": {
        "en": "Last failed attempt ({when}): {message}",
        "zh": "最近一次失败的尝试（{when}）：{message}",
    },
    "failure.status_fallback": {
        "en": "Engine fallback: {note}",
        "zh": "引擎回退：{note}",
    },
    # -- install --hardware: plan for less (or other) memory than detected ---------------------------------------
    "arg.install_hardware": {
        "en": "plan with the memory, GPUs and CPU stated in this 'doctor --json' file instead of the detected ones "
              "(e.g. to leave RAM to other programs)",
        "zh": "按此 'doctor --json' 文件中写明的内存、GPU 和 CPU 做规划，而非检测到的值（例如为其他程序留出内存）",
    },
    "install.err_hardware_other": {
        "en": "the hardware profile describes a {system} {arch} machine, but this one is {here}",
        "zh": "硬件描述文件对应 {system} {arch} 机器，而本机是 {here}",
    },
    "install.hint_hardware_other": {
        "en": "install --hardware adjusts memory and GPUs for this machine only; use 'qwenkit plan --hardware' to "
              "plan for another machine.",
        "zh": "install --hardware 只调整本机的内存和 GPU；为另一台机器做规划请用 'qwenkit plan --hardware'。",
    },
}
