"""The render stage: the start scripts (``run_qwen.sh`` / ``run_qwen.bat``) from ``templates/``.
"""
