"""Before the kit starts the server: the files it renders hold what this install renders now.

``models.ini``, ``run_qwen.sh`` / ``run_qwen.bat`` and the service definitions decide what llama-server loads and
where it listens. One changed by hand or by another program — a preset section that names a file outside the home,
a ``host = 0.0.0.0`` line — would be loaded by the next start the kit makes, and its failure blamed on the model.
So before each start the kit makes (an install's rerun, ``qwenkit service start``), each file is compared byte for
byte with what the install record renders now (``record.state.launch_spec`` → ``render.start_scripts.start_files``
and the recorded manager's ``rendered``); the ones that differ are written again (the service registered again with
its definition), and the user is told which. Comparing with a fresh render rather than a recorded hash keeps the
check true whichever command last wrote the files.
"""

from __future__ import annotations

from bootstrap.core.console import join_items, t, warn
from bootstrap.core.home import Home
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.register.base import ServiceManager
from bootstrap.register.managers import install_service, recorded_manager
from bootstrap.render.start_scripts import render_start_scripts, start_files


def render_again(spec: LaunchSpec, home: Home, manager: ServiceManager) -> list[str]:
    """Write again every rendered file whose bytes differ from what ``spec`` renders now, say which, and return
    their names (none: nothing was written). The service's definition is checked only for the manager this home
    recorded: a manager never installed here is not installed by a check."""
    start = [f for f in start_files(spec, home) if not f.on_disk()]
    definitions = manager.rendered(spec) if recorded_manager(home) == manager.name else []
    stale = [f for f in definitions if not f.on_disk()]
    if start:
        render_start_scripts(spec, home)
    if stale:
        install_service(manager, spec)
    names = list(dict.fromkeys(f.path.name for f in start + stale))
    if names:
        warn(t("service.rewritten", files=join_items(names)))
    return names
