"""The tune stage: the plan checked against llama.cpp's own fit (``llama-fit-params``) on this machine.
"""
