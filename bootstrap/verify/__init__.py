"""The verify stage: the installed server proves it answers like the OpenAI API, with its key, and is measured.
"""
