"""Every user-facing sentence, in English and Simplified Chinese, keyed by a short id.

Kept apart from ``console`` so the catalogue can be reviewed (and tested for completeness) as one table.
Each stage owns one module (``doctor``, ``gguf``, ``plan``, ``fetch``, ``sources``…) whose ``MESSAGES`` dict is
merged here; a key defined twice is a bug caught at import.

Chinese glossary: one term per concept, in every module (tests/app/test_zh_output.py runs every command under a
Chinese locale and fails on English prose or an ASCII colon after Chinese text):

====================  ==================  =====================================================================
concept               zh                  not
====================  ==================  =====================================================================
catalog               模型目录            目录 alone (that is any folder)
install folder/home   安装目录            —
engine                推理引擎 / 引擎     —
engine variant/build  引擎构建 / 构建     版本 (a version is 版本: kit, engine release, GGUF format)
hub revision          修订版              版本
quant                 量化版本            量化 alone in prose (fine in a syntax hint: id[:量化])
context               上下文              —
thinking              思考模式            —
service               服务 (后台服务)     服务器, which is the llama-server process
start script          启动脚本            —
runtime venv          Python 环境         虚拟环境
wheels (of the venv)  依赖包              安装包, which is the offline bundle
offline bundle        离线安装包 / 离线包 —
====================  ==================  =====================================================================

Punctuation: full-width ：；，（） after Chinese text (``console.label``, ``console.aside``, ``join_items``); Latin
words that stay (GPU, token, llama.cpp, product and model names) are listed with their reasons in that test.
"""

from __future__ import annotations

from types import ModuleType

from bootstrap.core.messages import (
    agent_template,
    bundle,
    bundle_create,
    chat,
    core,
    deploy,
    doctor,
    engine,
    failure,
    fetch,
    gguf,
    gpus,
    identity,
    inputs,
    install,
    launch,
    launcher,
    library,
    logs,
    memory,
    names,
    options,
    output,
    plan,
    presets,
    prompt_cache,
    prompt_cache_router,
    ps,
    pyenv,
    render,
    service,
    setup,
    sources,
    speed_source,
    state,
    swa_full,
    team,
    uninstall,
    verify,
)

# Static imports (not importlib) so PyInstaller sees every part.
_PARTS: tuple[ModuleType, ...] = (core, inputs, doctor, gguf, memory, plan, fetch, sources, engine, failure, state,
                                  pyenv, deploy, render, verify, service, launcher, install, uninstall, setup, bundle,
                                  bundle_create, identity, logs, gpus, options, output, speed_source, library, team,
                                  agent_template, launch, names, presets, ps, chat, prompt_cache,
                                  prompt_cache_router, swa_full)


def _merge() -> dict[str, dict[str, str]]:
    merged: dict[str, dict[str, str]] = {}
    for part in _PARTS:
        for key, texts in part.MESSAGES.items():
            if key in merged:
                raise RuntimeError(f"message key {key!r} defined twice ({part.__name__})")
            merged[key] = texts
    return merged


MESSAGES: dict[str, dict[str, str]] = _merge()
