"""The place stage: the engine release extracted safely and self-tested, the runtime venv, the API key; what the
engine is (its probe) and why it failed (its failure classifier).
"""
