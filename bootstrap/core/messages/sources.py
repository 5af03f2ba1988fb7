"""Messages of model sources and the ``download`` command: resolving, probing, failover."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    "sources.err_unreachable": {
        "en": "cannot reach {source} ({host}): {cause}",
        "zh": "无法连接下载源 {source}（{host}）：{cause}",
    },
    "sources.cause_dns": {
        "en": "DNS lookup failed (no network, or the name is blocked)",
        "zh": "域名解析失败（没有网络，或该域名被屏蔽）",
    },
    "sources.cause_timeout": {
        "en": "no answer within {seconds} s (packets dropped by a firewall, or a very slow network)",
        "zh": "{seconds} 秒内无应答（数据包被防火墙丢弃，或网络极慢）",
    },
    "sources.cause_refused": {
        "en": "connection refused",
        "zh": "连接被拒绝",
    },
    "sources.cause_unreachable": {
        "en": "no route to it (the network is down)",
        "zh": "没有通往它的路由（网络未连接）",
    },
    "sources.cause_tls": {
        "en": "certificate verify failed: something intercepts TLS (a company proxy or security software)",
        "zh": "证书校验失败：有程序拦截了 TLS（公司代理或安全软件）",
    },
    "sources.cause_http": {
        "en": "it answered HTTP {status}",
        "zh": "服务器返回 HTTP {status}",
    },
    "sources.cause_other": {
        "en": "failed: {detail}",
        "zh": "出错：{detail}",
    },
    "sources.hint_unreachable": {
        "en": "ways out: another source (--source modelscope or --source hf), a Hugging Face mirror "
              "(QWENKIT_HF_MIRRORS or HF_ENDPOINT), a proxy (HTTPS_PROXY), or an offline bundle (--bundle)",
        "zh": "可以：换一个下载源（--source modelscope 或 --source hf）、使用 Hugging Face 镜像"
              "（QWENKIT_HF_MIRRORS 或 HF_ENDPOINT）、设置代理（HTTPS_PROXY），或使用离线安装包（--bundle）。",
    },
    "sources.hint_tls": {
        "en": "set SSL_CERT_FILE to the intercepting proxy's CA bundle, or use another source (--source modelscope) "
              "or an offline bundle (--bundle)",
        "zh": "请将 SSL_CERT_FILE 设为拦截代理的 CA 证书文件，或换一个下载源（--source modelscope），"
              "或使用离线安装包（--bundle）。",
    },
    "sources.err_all_failed": {
        "en": "no source could be used: {details}",
        "zh": "没有可用的下载源：{details}",
    },
    "sources.err_gated": {
        "en": "{repo} on {source} is gated: it needs an access token",
        "zh": "{source} 上的 {repo} 需要授权访问（gated），必须提供访问令牌",
    },
    "sources.hint_gated": {
        "en": "accept the model's terms on the hub, then set HF_TOKEN and rerun",
        "zh": "请先在模型页面同意使用条款，然后设置 HF_TOKEN 并重新运行。",
    },
    "sources.err_repo_not_found": {
        "en": "repository {repo} was not found on {source}",
        "zh": "在 {source} 上找不到仓库 {repo}",
    },
    "sources.err_revision_not_found": {
        "en": "revision {revision} of {repo} was not found on {source}",
        "zh": "在 {source} 上找不到 {repo} 的修订版 {revision}",
    },
    "sources.err_file_not_found": {
        "en": "file {path} is not in {repo} on {source}",
        "zh": "{source} 上的 {repo} 中没有文件 {path}",
    },
    "sources.hint_file_not_found": {
        "en": "GGUF files in that folder of the repo: {available}",
        "zh": "仓库该目录中有这些 GGUF 文件：{available}；请选用其中之一。",
    },
    "sources.cause_deadline": {
        "en": "no complete answer within {seconds} s (it answers too slowly)",
        "zh": "{seconds} 秒内未收到完整应答（应答过慢）",
    },
    "sources.cause_slow": {
        "en": "slower than {rate}/s for {seconds} s",
        "zh": "连续 {seconds} 秒低于 {rate}/秒",
    },
    "sources.hint_offline": {
        "en": "no download source answers from this machine: install from an offline bundle (--bundle DIR, made "
              "with 'qwenkit bundle create' on a connected machine), or set HTTPS_PROXY if this network needs a proxy",
        "zh": "本机连不上任何下载源：请使用离线安装包（--bundle 目录，在联网的机器上用 'qwenkit bundle create' 制作），"
              "如果本网络需要代理，请设置 HTTPS_PROXY。",
    },
    "sources.err_bad_listing": {
        "en": "bad listing from {source} ({host}): {what}",
        "zh": "{source}（{host}）返回的文件列表无效：{what}",
    },
    "sources.hint_bad_listing": {
        "en": "nothing was downloaded from it; another source (--source), a mirror (QWENKIT_HF_MIRRORS) or an offline "
              "bundle (--bundle) avoids it. If it persists, the source or a proxy in between is broken",
        "zh": "未从该下载源下载任何内容；可换一个下载源（--source）、使用镜像（QWENKIT_HF_MIRRORS）或离线安装包"
              "（--bundle）。如果问题持续，说明下载源或中间的代理有故障。",
    },
    "sources.listing_size": {
        "en": "{field} is {value}, not a size in bytes",
        "zh": "{field} 为 {value}，不是以字节计的大小",
    },
    "sources.listing_sha256": {
        "en": "{field} is {value}, not a sha256",
        "zh": "{field} 为 {value}，不是 sha256",
    },
    "sources.listing_shape": {
        "en": "unexpected {field}: {value}",
        "zh": "{field} 的内容不符合预期：{value}",
    },
    "sources.listing_missing": {
        "en": "no {field} in it",
        "zh": "其中没有 {field}",
    },
    "sources.listing_too_large": {
        "en": "larger than {limit}",
        "zh": "超过 {limit}",
    },
    "sources.listing_inflates": {
        "en": "it inflates past {limit} (Content-Encoding {encoding})",
        "zh": "解压后超过 {limit}（Content-Encoding {encoding}）",
    },
    "sources.listing_encoding": {
        "en": "Content-Encoding {encoding} cannot be read within bounds",
        "zh": "无法在限制内读取 Content-Encoding {encoding}",
    },
    "sources.listing_error": {
        "en": "it could not be read ({detail})",
        "zh": "无法解析（{detail}）",
    },
    "sources.err_listing_capped": {
        "en": "{source} listed only {count} entries of {repo}/{directory} (its listing limit); the file may be "
              "beyond it",
        "zh": "{source} 只列出了 {repo}/{directory} 的 {count} 个条目（已达列表上限），文件可能在上限之外",
    },
    "sources.err_bad_manifest": {
        "en": "the bundle manifest at {where} is invalid: {detail}",
        "zh": "{where} 处的离线包清单无效：{detail}",
    },
    "sources.err_no_bundle": {
        "en": "{where} is not a bundle (no payload/manifest.json)",
        "zh": "{where} 不是离线安装包（缺少 payload/manifest.json）",
    },
    "sources.err_no_repos": {
        "en": "this model names no repository to download from",
        "zh": "该模型没有指定可下载的仓库",
    },
    "sources.err_bad_source": {
        "en": "unknown source: {source}",
        "zh": "未知的下载源：{source}",
    },
    "sources.hint_bad_source": {
        "en": "use auto, hf, modelscope, an http(s) mirror or bundle URL, or a bundle folder",
        "zh": "可用的值：auto、hf、modelscope、镜像或离线包的 http（s）地址，或离线包目录。",
    },
    "sources.err_hint_mismatch": {
        "en": "{path}: the catalog expects sha256 {expected} but {source} lists {listed}",
        "zh": "{path}：模型目录中记录的 sha256 为 {expected}，但 {source} 列出的是 {listed}",
    },
    "sources.hint_hint_mismatch": {
        "en": "the file on the hub changed or the source is not genuine; nothing was downloaded",
        "zh": "下载源上的文件已变化或来源不可信；未下载任何内容。",
    },
    "sources.note_disagrees": {
        "en": "{source} is not used for {path}: it lists sha256 {listed}..., {preferred} lists {sha256}...",
        "zh": "不使用 {source} 下载 {path}：它列出的 sha256 为 {listed}…，而 {preferred} 为 {sha256}…",
    },
    "sources.probe": {
        "en": "source {source}: {millis} ms",
        "zh": "下载源 {source}：{millis} 毫秒",
    },
    "sources.dropped": {
        "en": "source {source} skipped: {reason}",
        "zh": "已跳过下载源 {source}：{reason}",
    },
    "sources.err_local_model": {
        "en": "{model} is a local file: download takes a catalog id or hf:/ms: file",
        "zh": "{model} 是本地文件：download 只接受模型目录中的模型 id 或 hf:/ms: 文件",
    },
    "sources.err_bundle_file": {
        "en": "{path} does not match the bundle manifest (sha256 {expected} expected, {actual} found)",
        "zh": "{path} 与离线包清单不符（应为 sha256 {expected}，实际为 {actual}）",
    },
    "sources.err_bad_path": {
        "en": "refusing the file name {path}: it would leave the destination folder",
        "zh": "拒绝文件名 {path}：它会指向目标目录之外",
    },
    "sources.placed": {
        "en": "{path}  {size}  sha256 {sha256}...  from {source}",
        "zh": "{path}  {size}  sha256 {sha256}…  来自 {source}",
    },
    "sources.reused": {
        "en": "{path}  {size}  sha256 {sha256}...  already present",
        "zh": "{path}  {size}  sha256 {sha256}…  已存在，无需下载",
    },
}
