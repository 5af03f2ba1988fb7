"""``qwenkit run`` / ``qwenkit chat``: a streamed chat in the terminal against this install (docs/terminal-chat.md).

``conversation`` holds the turns and asks the server (the answer read on a worker thread, so Ctrl-C stops it on
every OS), ``typed`` reads what the user types (several lines, slash commands), ``terminal`` runs the session and
shows the answer. The endpoint, key and model names come in as data (``agents.target`` finds them for the command).
"""
