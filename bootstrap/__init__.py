"""QwenClientKit: turns a PC into a local, OpenAI-compatible Qwen server on llama.cpp's llama-server."""

__version__ = "0.1.0"
