"""The tiny vision pair loads in the real llama-server with ``--mmproj`` and answers a chat turn with an image.

The pair is ``tests/support/tiny_vision.py``'s: the tiny llama text model plus a LLaVA-style ``mlp`` projector.
The test checks what later tests rely on: the image goes through the projector (the log's clip/mtmd lines), the
answer is ordinary generated text, the API key guards image requests like text ones, and the projector's weight
size in the log is the sum of the mmproj's tensor bytes (clip.cpp prints it with ``%.2f MiB``, so at ``-lv 4``).
"""

from __future__ import annotations

import base64
import re
from pathlib import Path

import requests

from tests.support.llama import LlamaServer
from tests.support.llama_log import logged_as
from tests.support.tiny_vision import PROJECTOR_TYPE, VisionSpec, mmproj_tensor_bytes, tiny_png, write_vision_pair

KEY = "test-vision-key"
_PFX = r"^(?:[\d.]+ [A-Z] )?"
# tools/mtmd/clip.cpp load_hparams and tools/server/server-context.cpp load_model / encode_mtmd
PROJECTOR_LINE = re.compile(_PFX + r"load_hparams: projector: +(\S+)$", re.M)
MODEL_SIZE_LINE = re.compile(_PFX + r"load_hparams: model size: +([\d.]+) MiB$", re.M)
IMAGE_BATCH_LINE = re.compile(r"decoding image batch 1/1, n_tokens_batch = (\d+)")


def _image_body(png: bytes) -> dict:
    url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return {
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": url}},
        ]}],
        "max_tokens": 8,
        "temperature": 0,
    }


def test_tiny_vision_pair_answers_an_image_request(llama_server: Path, tmp_path: Path) -> None:
    model, mmproj = write_vision_pair(tmp_path)
    assert mmproj.name.startswith("mmproj")
    assert model.stat().st_size < 1_000_000 and mmproj.stat().st_size < 1_000_000
    body = _image_body(tiny_png(width=20, height=12))  # not square, not image_size: the preprocessor pads/resizes
    args = ["--mmproj", str(mmproj), "-c", "512", "-t", "2", "-lv", "4"]
    with LlamaServer(llama_server, model, args, api_key=KEY, ready_timeout=120) as srv:
        url = f"{srv.base_url}/v1/chat/completions"
        resp = requests.post(url, json=body, headers=srv.headers(), timeout=120)  # a bound, not a speed claim
        unauthorized = requests.post(url, json=body, timeout=60)
    log = srv.log()  # after the stop: llama.cpp's log is written by a worker thread and can lag the response

    assert resp.status_code == 200, resp.text
    answer = resp.json()
    assert answer["choices"][0]["message"]["content"].strip(), answer
    assert unauthorized.status_code == 401, unauthorized.text

    assert f"loaded multimodal model, '{mmproj}'" in log
    assert PROJECTOR_LINE.findall(log) == [PROJECTOR_TYPE]
    (size,) = MODEL_SIZE_LINE.findall(log)
    assert logged_as(float(size), mmproj_tensor_bytes(mmproj)), (size, mmproj_tensor_bytes(mmproj))
    # the image became one embedding per patch, and those count in the prompt
    assert [int(n) for n in IMAGE_BATCH_LINE.findall(log)] == [VisionSpec().n_patches]
    assert answer["usage"]["prompt_tokens"] > VisionSpec().n_patches
