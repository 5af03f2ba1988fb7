"""One module per ``qwenkit`` command, each a thin ``run(args) -> int`` over the pipeline stages.

``bootstrap.app.cli.COMMANDS`` names the module of every command that exists.
"""
