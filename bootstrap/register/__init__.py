"""The register stage (DESIGN.md §5): one module per service manager (``systemd``, ``launchd``, ``windows_task``,
``winsw``, and ``fallback`` where none runs), the records they share (``base``), the choice of one for this machine
(``managers``), and the quick look at whether the server answers (``server_health``).

Kept empty on purpose: importing ``bootstrap.register.server_health`` (a no-op rerun's one question) must not load
every manager and the template engine.
"""
