"""The RPC workers' memory, as a head sees it: for ``install --rpc`` and its preview ``plan --rpc``.

A head is an installed member first: its workers are asked through the engine this home already runs, so the
probe speaks the protocol version the server that will use them speaks (``place.rpc_probe``; one worker at a
time, so a failing one is named). A worker serves one head at a time, so one that this home's running server
holds is not asked again: its devices as recorded at the last install stand in (``_held_workers``).
"""

from __future__ import annotations

from bootstrap.core.console import info, t
from bootstrap.core.errors import UsageError
from bootstrap.core.home import Home
from bootstrap.core.sizes import MIB, gib_text
from bootstrap.detect.hardware import HardwareProfile
from bootstrap.place.engine_probe import EngineDevice
from bootstrap.place.rpc_probe import probe_workers
from bootstrap.plan.launch_spec import LaunchSpec
from bootstrap.record.state import InstallState, launch_spec
from bootstrap.register.server_identity import port_holder
from bootstrap.tune.devices import with_rpc_workers
from bootstrap.verify.rpc_workers import endpoints_in


def with_workers(home: Home, hardware: HardwareProfile, endpoints: tuple[str, ...],
                 previous: InstallState | None) -> HardwareProfile:
    """``hardware`` with the devices of the RPC workers at ``endpoints``; exit 2 when this home has no install
    (no engine to ask them with), exit 4/6 for a worker that does not answer or fails the handshake."""
    if previous is None:
        raise UsageError(t("rpc.err_head_not_installed", home=home.root), t("rpc.hint_head_not_installed"))
    spec = launch_spec(previous, home)
    known = _held_workers(previous, spec, endpoints)
    for endpoint in known:
        info(t("rpc.workers_held", endpoint=endpoint))
    devices = probe_workers(spec.server, endpoints, known=known)
    info(t("rpc.workers_seen", devices="; ".join(
        t("rpc.device", device=d.name, endpoint=d.description, free=gib_text(d.free_mib * MIB),
          total=gib_text(d.total_mib * MIB)) for d in devices)))
    return with_rpc_workers(hardware, devices)


def _held_workers(previous: InstallState, spec: LaunchSpec, endpoints: tuple[str, ...]
                  ) -> dict[str, tuple[EngineDevice, ...]]:
    """The recorded devices of the workers this home's running server holds (asking one now would wait for that
    server to let go). Only while the server runs, and only as recorded."""
    used = set(endpoints_in(spec.args)) & set(endpoints)
    if not used or not port_holder(spec).ours:
        return {}
    held: dict[str, tuple[EngineDevice, ...]] = {}
    for d in previous.server.rpc_devices:
        if d.endpoint in used:
            held[d.endpoint] = (*held.get(d.endpoint, ()), EngineDevice(d.name, d.endpoint, d.total_mib, d.free_mib))
    return held
