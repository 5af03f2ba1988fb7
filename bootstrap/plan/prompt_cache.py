"""The prompt cache on disk: its budget, and the key that keeps a saved slot with the server it was made by.

llama-server's slot files (``--slot-save-path``, ``POST /slots/{id}?action=save|restore``) carry no model identity:
``llama_state_seq_save_file`` (llama.cpp ``src/llama-context.cpp``) writes a magic, a version, the tokens and the
sequence's memory, nothing of the weights, and the server's ``SERVER_TASK_TYPE_SLOT_RESTORE`` checks only that the
tokens are valid ids. A file made by another revision of the model, another engine build or with another chat
template would load and answer from the wrong state. So every file lives in a folder named for all three
(``cache_key``), and a server is started with its own folder only. docs/prompt-cache.md has the rest.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from bootstrap.core.home import PROMPT_CACHE_NAME
from bootstrap.core.sizes import MIB

FOLDER = PROMPT_CACHE_NAME  # under the install home
BUDGET_FILE = "budget.json"  # in FOLDER: the plan's budget, for whatever saves (the supervisor, `service`)
MAX_BUDGET_MIB = 4096  # a dozen agent prefixes of a 35B hybrid model (~300 MB each at 12k tokens)
MIN_BUDGET_MIB = 256  # below this the disk is too full to spend any of it on a cache
DISK_SHARE = 10  # at most a tenth of what the model's download leaves free
# Router mode: the header on the kit's own save and restore requests, so the front (register/router_front.py)
# counts them as no client's and does not restore that model again (register/front_cache.py).
CACHE_HEADER = "X-Qwenkit-Prompt-Cache"


def disk_budget_mib(free_bytes: int, model_bytes: int) -> int:
    """MiB of disk the saved slots may use together: a tenth of what stays free after the model, at most
    ``MAX_BUDGET_MIB``; 0 (nothing saved) where that is under ``MIN_BUDGET_MIB``."""
    spare = max(0, free_bytes - model_bytes) // DISK_SHARE // MIB
    mib = min(MAX_BUDGET_MIB, spare)
    return mib if mib >= MIN_BUDGET_MIB else 0


def file_sha256(path: Path | None) -> str:
    """A chat template file's SHA-256 ("" for none: the model's own template, inside the model's hash)."""
    if path is None:
        return ""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "unreadable"  # a key no saved file has: nothing is restored


def cache_key(model_sha256: str, engine_build: str, template_sha256: str) -> str:
    """The folder name for one model revision, engine build and chat template (16 hex digits)."""
    text = f"model={model_sha256.lower()}\nengine={engine_build}\ntemplate={template_sha256.lower()}\n"
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def cache_root(home: Path) -> Path:
    return home / FOLDER


def cache_dir(home: Path, model_sha256: str, engine_build: str, template: Path | None) -> Path:
    """Where this server's slots are saved: ``<home>/prompt-cache/<key>``."""
    return cache_root(home) / cache_key(model_sha256, engine_build, file_sha256(template))
