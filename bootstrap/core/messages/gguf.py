"""Messages of the GGUF header reader: truncated, hostile or unsupported headers, and remote header reads."""

from __future__ import annotations

MESSAGES: dict[str, dict[str, str]] = {
    # where in the header a problem was found
    "gguf.where.header": {"en": "the header", "zh": "文件头"},
    "gguf.where.key_index": {"en": "key #{index}", "zh": "第 {index} 个键"},
    "gguf.where.key": {"en": "key '{kv}'", "zh": "键“{kv}”"},
    "gguf.where.tensor_index": {"en": "tensor #{index}", "zh": "第 {index} 个张量"},
    "gguf.where.tensor": {"en": "tensor '{name}'", "zh": "张量“{name}”"},
    "gguf.where.data": {"en": "the tensor data", "zh": "张量数据"},
    "gguf.what.kv": {"en": "key-value", "zh": "键值对"},
    "gguf.what.tensor": {"en": "tensor", "zh": "张量"},
    # the file itself
    "gguf.cannot_read": {"en": "{source}: cannot read the file: {error}", "zh": "{source}：无法读取文件：{error}"},
    "gguf.bad_magic": {
        "en": "{source}: not a GGUF file (it starts with {magic}, expected b'GGUF')",
        "zh": "{source}：不是 GGUF 文件（开头是 {magic}，应为 b'GGUF'）",
    },
    "gguf.big_endian": {
        "en": "{source}: the version field reads {version}: a big-endian GGUF file; only little-endian files are "
              "supported",
        "zh": "{source}：版本字段为 {version}，这是大端字节序的 GGUF 文件；仅支持小端字节序文件",
    },
    "gguf.bad_version": {
        "en": "{source}: GGUF version {version} is not supported (only versions 2 and 3 are)",
        "zh": "{source}：不支持 GGUF 版本 {version}（仅支持版本 2 和 3）",
    },
    "gguf.truncated": {
        "en": "{source}: truncated GGUF header: {where} needs {needed} bytes but only {size} are there",
        "zh": "{source}：GGUF 文件头不完整：{where} 需要 {needed} 字节，但只有 {size} 字节",
    },
    "gguf.bad_count": {
        "en": "{source}: negative {what} count {count}",
        "zh": "{source}：{what}数量为负数 {count}",
    },
    "gguf.count_too_large": {
        "en": "{source}: {what}: count {count} cannot fit in a file of {size} bytes",
        "zh": "{source}：{what}：数量 {count} 不可能放进 {size} 字节的文件",
    },
    "gguf.array_too_long": {
        "en": "{source}: {where}: array of {count} items exceeds the limit of {limit}",
        "zh": "{source}：{where}：数组有 {count} 项，超过上限 {limit}",
    },
    "gguf.string_too_long": {
        "en": "{source}: {where}: string length {length} at byte {offset} exceeds the 1 GiB limit",
        "zh": "{source}：{where}：第 {offset} 字节处的字符串长度 {length} 超过 1 GiB 上限",
    },
    "gguf.bad_utf8": {
        "en": "{source}: {where}: the text at byte {offset} is not valid UTF-8",
        "zh": "{source}：{where}：第 {offset} 字节处的文本不是有效的 UTF-8",
    },
    "gguf.bad_value_type": {
        "en": "{source}: key '{kv}' has an unknown value type {type}",
        "zh": "{source}：键“{kv}”的值类型 {type} 无效",
    },
    "gguf.empty_key": {"en": "{source}: key #{index} is empty", "zh": "{source}：第 {index} 个键为空"},
    "gguf.duplicate_key": {
        "en": "{source}: key '{kv}' appears twice (llama.cpp rejects such files)",
        "zh": "{source}：键“{kv}”重复出现（llama.cpp 会拒绝此类文件）",
    },
    "gguf.bad_alignment": {
        "en": "{source}: general.alignment must be a u32 power of two, not {value}",
        "zh": "{source}：general.alignment 必须是 u32 类型的 2 的幂，而不是 {value}",
    },
    "gguf.name_too_long": {
        "en": "{source}: tensor name '{name}' is longer than {limit} bytes",
        "zh": "{source}：张量名“{name}”超过 {limit} 字节",
    },
    "gguf.duplicate_tensor": {
        "en": "{source}: tensor '{name}' appears twice (llama.cpp rejects such files)",
        "zh": "{source}：张量“{name}”重复出现（llama.cpp 会拒绝此类文件）",
    },
    "gguf.bad_ndims": {
        "en": "{source}: tensor '{name}' has {n_dims} dimensions (at most {limit})",
        "zh": "{source}：张量“{name}”有 {n_dims} 个维度（最多 {limit} 个）",
    },
    "gguf.bad_shape": {
        "en": "{source}: tensor '{name}' has an invalid shape {shape}",
        "zh": "{source}：张量“{name}”的形状 {shape} 无效",
    },
    "gguf.bad_ggml_type": {
        "en": "{source}: tensor '{name}' has an unknown ggml type {type}",
        "zh": "{source}：张量“{name}”的 ggml 类型 {type} 未知",
    },
    "gguf.bad_block": {
        "en": "{source}: tensor '{name}': a row of {ne0} elements is not a multiple of the {type_name} block "
              "size {block}",
        "zh": "{source}：张量“{name}”：每行 {ne0} 个元素不是 {type_name} 块大小 {block} 的整数倍",
    },
    "gguf.bad_offset": {
        "en": "{source}: tensor '{name}' data starts at offset {offset}, expected {expected} (tensor data must be "
              "packed in order without overlap)",
        "zh": "{source}：张量“{name}”的数据起始偏移为 {offset}，应为 {expected}（张量数据必须按顺序紧密排列、"
              "不得重叠）",
    },
    "gguf.data_past_eof": {
        "en": "{source}: tensor '{name}' data ends at byte {end}, past the end of the file ({size} bytes)",
        "zh": "{source}：张量“{name}”的数据结束于第 {end} 字节，超出文件末尾（文件 {size} 字节）",
    },
    "gguf.no_architecture": {
        "en": "{source}: the GGUF header has no general.architecture",
        "zh": "{source}：GGUF 文件头缺少 general.architecture",
    },
    "gguf.header_too_large": {
        "en": "{source}: the GGUF header needs more than {limit} bytes ({needed} so far); refusing to read more",
        "zh": "{source}：GGUF 文件头超过 {limit} 字节（目前已需要 {needed} 字节），不再继续读取",
    },
    # remote reads (SourceError, exit 4)
    "gguf.http_failed": {
        "en": "{url}: reading the GGUF header failed: {error}",
        "zh": "{url}：读取 GGUF 文件头失败：{error}",
    },
    "gguf.http_status": {
        "en": "{url}: HTTP {status} while reading the GGUF header",
        "zh": "{url}：读取 GGUF 文件头时收到 HTTP {status}",
    },
    "gguf.range_mismatch": {
        "en": "{url}: asked for bytes {asked}, the server answered {got}",
        "zh": "{url}：请求字节范围 {asked}，服务器却返回 {got}",
    },
    "gguf.short_body": {
        "en": "{url}: the server sent {got} of {expected} bytes",
        "zh": "{url}：服务器只发送了 {expected} 字节中的 {got} 字节",
    },
    "gguf.too_many_redirects": {
        "en": "{url}: more than {limit} redirects",
        "zh": "{url}：重定向超过 {limit} 次",
    },
    "gguf.redirect_downgrade": {
        "en": "{url}: refusing a redirect from https to {location}",
        "zh": "{url}：拒绝从 https 重定向到 {location}",
    },
    "gguf.hint_rerun": {
        "en": "check the network or the mirror, then run the command again",
        "zh": "请检查网络或镜像源，然后重新运行该命令。",
    },
}
