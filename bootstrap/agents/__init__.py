"""Agent clients (``qwenkit launch``): the coding agents and GUI/library clients people point at this install.

One module per client that the kit starts (``claude_code``, ``codex``, ``opencode``): where it is found, what it is
told (environment, command-line settings, the model's real context), what ``--config`` writes into its own config
file and how ``--restore`` takes exactly that back. The shared pieces once: ``target`` (the endpoint, key, model
and context a client is pointed at), ``programs`` (finding a client, npm's Windows shims), ``json_text`` /
``toml_text`` (edits that leave every other byte of a user's file as it was), ``written`` (the record of those
edits in the home), ``needs`` (the context a client needs and the plan's verdict), ``recipes`` (what ``--print``
shows for clients a user wires by hand). docs/agents.md.
"""
