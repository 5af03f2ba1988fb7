"""The plan stage: GGUF headers → model profiles → the memory model → the engine variant, flags and launch settings,
each with a one-line reason. Pure decisions from records; no network, no downloads.
"""
