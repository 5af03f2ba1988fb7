"""The record stage: ``<home>/state.json``, what is installed, from where, with which hashes and parameters.

Written atomically as the last step of a successful run, so it only ever describes an install that was verified.
Paths inside the home are stored relative to it (a home restored to another drive still reads correctly); files
outside the home (a local ``.gguf`` the user pointed at) stay absolute. ``status`` and ``service`` rebuild the
``LaunchSpec`` from this record; the start scripts are rendered from the same spec, so they always agree.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from bootstrap import __version__
from bootstrap.core.atomic_file import write_atomic
from bootstrap.core.console import t
from bootstrap.core.errors import UsageError
from bootstrap.core.file_formats import parse_json, read_regular
from bootstrap.core.home import Home
from bootstrap.core.json_fields import FieldReader
from bootstrap.core.private_address import check_rpc_endpoints
from bootstrap.plan.keep_alive import effective
from bootstrap.plan.launch_spec import LaunchSpec, PresetModel, thinking_of
from bootstrap.plan.presets import Preset, preset_from_json
from bootstrap.register.launcher_record import LauncherRecord
from bootstrap.verify.speed_records import SpeedCheck, check_from_json
from bootstrap.verify.tools_record import ToolsCheck, tools_from_json

SCHEMA_VERSION = 1
MAX_STATE_BYTES = 4 << 20  # a record is a few KiB; anything larger is not ours
PRIVATE = 0o600  # the recorded source may be a URL with credentials (https://user:password@intranet/…)


@dataclass(frozen=True)
class AssetRecord:
    name: str
    sha256: str
    size: int


@dataclass(frozen=True)
class GivenUpRecord:
    """A build of the engine that could not run on this machine (so a rerun does not download it again)."""

    variant: str
    cause: str  # engine_failure cause
    detail: str


@dataclass(frozen=True)
class EngineRecord:
    build: int  # the pinned release build (b<N>)
    variant: str
    dir: str  # relative to the home
    server: str  # relative to the home
    version: str | None  # what the binary printed for --version
    assets: tuple[AssetRecord, ...] = ()
    given_up: tuple[GivenUpRecord, ...] = ()  # preferred builds that failed here, in the order tried
    selftest_s: float | None = None  # how long the self-test took (None: not run in the run that wrote this)


@dataclass(frozen=True)
class FileRecord:
    role: str  # "model" | "shard" (a split GGUF's other parts) | "mmproj"
    path: str  # relative to the home (POSIX separators) or absolute when outside it
    size: int
    sha256: str
    source: str  # "hf", "modelscope", "bundle", "local", …
    revision: str | None = None
    # What the file looked like when verified: a rerun trusts a file whose size, mtime and inode still match
    # (no byte read); anything else is hashed again.
    mtime_ns: int | None = None
    inode: int | None = None


@dataclass(frozen=True)
class SwitchRecord:
    """The last upgrade's outage: the old server stopped → the new one answering ``/health`` (``gap_s``), of which
    the new server's own load took ``load_s`` (one copy of a model in memory at a time: it cannot be less)."""

    gap_s: float
    load_s: float


@dataclass(frozen=True)
class ChatTemplateRecord:
    """The chat template a model is served with instead of its own (``place/chat_template.py``), or, with ``path``
    None, why its own serves although it is of a family the kit fixes (``problem``)."""

    path: str | None  # relative to the home
    family: str
    fixes: tuple[str, ...] = ()
    source_sha256: str = ""  # the model's own template it was derived from
    problem: str | None = None  # "<fix>: <what it missed>" (plan/chat_template.TemplateShapeError)


@dataclass(frozen=True)
class ServerRecord:
    host: str
    port: int
    alias: str
    args: tuple[str, ...]  # the flags the scripts pass (tuned)
    plan_args: tuple[str, ...]  # what the planner chose, kept to compare on reruns
    tuned_by: str = "plan"  # "plan" | "fit"
    fit_args: tuple[str, ...] | None = None  # llama-fit-params' advice, when it ran
    retried: str | None = None  # the first start ran out of memory: why the recorded plan is smaller
    switch_over: SwitchRecord | None = None  # an upgrade's measured gap (None: a first install)
    planned_ram: int | None = None  # bytes of host RAM the plan predicted (``MemoryEstimate.host_total``)
    # The RPC workers' devices the plan counted (``install --rpc``): what a rerun uses for a worker this server holds
    # (a worker serves one head at a time, so it cannot be asked again while this server runs).
    rpc_devices: tuple[RpcDeviceRecord, ...] = ()
    chat_template: ChatTemplateRecord | None = None  # the kit's template for agent clients (None: the model's own)
    tools: ToolsCheck | None = None  # the tool-call proof at verify (None: not run)


@dataclass(frozen=True)
class RpcDeviceRecord:
    """One device an RPC worker lends, as the engine listed it: ``RPC0: 192.168.1.21:50052 (total, free MiB)``."""

    name: str
    endpoint: str
    total_mib: int
    free_mib: int


@dataclass(frozen=True)
class ServiceRecord:
    manager: str  # "systemd-user", "systemd-system", "launchd", "task-scheduler", "winsw", "script"
    installed: bool


@dataclass(frozen=True)
class RequestRecord:
    """What the user asked for, so a rerun with no arguments means "the same again, upgraded"."""

    model: str  # MODEL as understood: a catalog id (no quant unless the user named one), hf:/ms: file, or a path
    source: str = "auto"
    thinking: bool | None = None  # install --thinking on|off; None: the catalog's default for the model
    ctx: int | None = None  # install --ctx N; None: the plan's choice
    rpc: tuple[str, ...] = ()  # install --rpc IP:PORT,…: the RPC workers this head lends memory from
    keep_alive: int | None = None  # install --keep-alive, seconds (-1: never); None: the default (plan/keep_alive.py)
    preset: Preset | None = None  # install --system/--temperature/…: the default model's preset (plan/presets.py)

    @property
    def keep_alive_s(self) -> int:
        """The idle time after which each model's memory is given back, as in force."""
        return effective(self.keep_alive)


@dataclass(frozen=True)
class LibraryModel:
    """Another installed model served beside the default one (router mode, ``install/library.py``): the name
    requests send as ``"model"``, its verified files, and its own tuned flags."""

    name: str
    model_id: str
    quant: str
    role: str  # "chat" | "embedding"
    files: tuple[FileRecord, ...]
    args: tuple[str, ...]
    request: str  # MODEL as the user gave it (a rerun resolves it again)
    source: str = "auto"
    planned_ram: int | None = None  # bytes of host RAM the plan predicted for it alone
    chat_template: ChatTemplateRecord | None = None  # as ``ServerRecord.chat_template``
    tools: ToolsCheck | None = None  # as ``ServerRecord.tools``
    preset: Preset | None = None  # install MODEL --system/--temperature/…: this model's preset (plan/presets.py)

    def file(self, role: str) -> FileRecord | None:
        return next((f for f in self.files if f.role == role), None)

    @property
    def kind(self) -> str:
        """What it is for, as ``status`` says it: "embedding", "vision" (a chat model that reads images: it has a
        projector) or "chat"."""
        return model_kind(self.role, self.file("mmproj") is not None)


def model_kind(role: str, projector: bool) -> str:
    """"embedding", "vision" or "chat" (``LibraryModel.kind``)."""
    if role == "embedding":
        return "embedding"
    return "vision" if projector else "chat"


@dataclass(frozen=True)
class InstallState:
    system: str  # platform.system() the install was made for
    model_id: str
    quant: str
    engine: EngineRecord
    files: tuple[FileRecord, ...]
    server: ServerRecord
    service: ServiceRecord | None = None
    venv_python: str | None = None  # relative to the home; None when no venv could be made
    request: RequestRecord | None = None
    launcher: LauncherRecord | None = None  # the qwenkit command put on PATH (register.shell_command)
    speed: SpeedCheck | None = None  # measured vs predicted at verify (None: a record from before it existed)
    library: tuple[LibraryModel, ...] = ()  # the other installed models (router mode); the default is the above
    models_max: int = 0  # router mode: models loaded at once (all of them: each loads at startup)
    kit_version: str = __version__
    updated: str = field(default_factory=lambda: datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
    schema: int = SCHEMA_VERSION

    @property
    def thinking(self) -> bool | None:
        """Whether the server thinks by default: its ``--reasoning on|off`` flag (None when the engine build took no
        such flag and the chat template decides)."""
        return thinking_of(self.server.args)

    def file(self, role: str) -> FileRecord | None:
        return next((f for f in self.files if f.role == role), None)

    def embedding_name(self) -> str | None:
        """The name of the first embedding model installed beside the default (what ``rag.py`` asks), or None."""
        return next((m.name for m in self.library if m.role == "embedding"), None)

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["speed"] = None if self.speed is None else self.speed.to_json()
        doc["server"]["tools"] = None if self.server.tools is None else self.server.tools.to_json()
        for entry, model in zip(doc["library"], self.library, strict=True):
            entry["tools"] = None if model.tools is None else model.tools.to_json()
            _preset_json(entry, model.preset)
        if self.request is not None:
            _preset_json(doc["request"], self.request.preset)
        return {"schema": doc.pop("schema"), **doc}

    def tools(self, name: str | None = None) -> ToolsCheck | None:
        """The tool-call proof of the model served as ``name`` (None or the alias: the default one), or None when
        it was not run (an install from before the proof) or no such model is installed."""
        if name is None or name == self.server.alias:
            return self.server.tools
        return next((m.tools for m in self.library if m.name == name), None)


def _preset_json(doc: dict[str, Any], preset: Preset | None) -> None:
    """A preset as recorded: only the values set (plan/presets.py); none, no key (a record as before presets)."""
    if preset is None:
        doc.pop("preset", None)
    else:
        doc["preset"] = preset.to_json()


def file_intact(record: FileRecord, path: Path) -> bool:
    """The file still looks exactly as when it was verified (size, mtime, inode): trusted without a read."""
    try:
        st = path.stat()
    except OSError:
        return False
    return (st.st_size == record.size and record.mtime_ns is not None and st.st_mtime_ns == record.mtime_ns
            and record.inode is not None and st.st_ino == record.inode)


def relative_to_home(home: Home, path: Path) -> str:
    """How a path is stored: relative with ``/`` inside the home, absolute outside it."""
    try:
        return PurePosixPath(*Path(path).relative_to(home.root).parts).as_posix()
    except ValueError:
        return str(path)


def resolve_in_home(home: Home, stored: str) -> Path:
    """The absolute path of a stored path."""
    candidate = Path(stored)
    return candidate if candidate.is_absolute() else home.root.joinpath(*PurePosixPath(stored).parts)


def save_state(home: Home, state: InstallState) -> None:
    """Atomically replace ``state.json`` (the record stage)."""
    home.root.mkdir(parents=True, exist_ok=True)
    data = json.dumps(state.to_json(), ensure_ascii=False, indent=2).encode("utf-8") + b"\n"
    write_atomic(home.state_file, data, mode=PRIVATE)


def _bad(field_name: str, detail: str) -> UsageError:
    return UsageError(t("state.err_field", field=field_name, detail=detail), t("state.hint_damaged"))


def _read_engine(r: FieldReader) -> EngineRecord:
    selftest = r.doc.get("selftest_s")
    return EngineRecord(build=r.integer("build"), variant=r.text("variant"), dir=r.text("dir"),
                        server=r.text("server"), version=r.opt_text("version"),
                        assets=tuple(AssetRecord(a.text("name"), a.text("sha256"), a.integer("size"))
                                     for a in r.items("assets")),
                        given_up=tuple(GivenUpRecord(g.text("variant"), g.text("cause"), g.text("detail"))
                                       for g in (r.items("given_up") if "given_up" in r.doc else ())),
                        selftest_s=float(selftest) if isinstance(selftest, (int, float)) else None)


def _read_file(r: FieldReader) -> FileRecord:
    return FileRecord(role=r.choice("role", ("model", "shard", "mmproj")), path=r.text("path"), size=r.integer("size"),
                      sha256=r.text("sha256"), source=r.text("source"), revision=r.opt_text("revision"),
                      mtime_ns=_opt_int(r, "mtime_ns"), inode=_opt_int(r, "inode"))


def _opt_int(r: FieldReader, name: str) -> int | None:
    return None if r.doc.get(name) is None else r.integer(name)


def _read_server(r: FieldReader) -> ServerRecord:
    fit = r.doc.get("fit_args")
    switch = r.doc.get("switch_over")
    return ServerRecord(host=r.text("host"), port=r.integer("port", minimum=1), alias=r.text("alias"),
                        args=r.strings("args"), plan_args=r.strings("plan_args"),
                        tuned_by=r.choice("tuned_by", ("plan", "fit")),
                        fit_args=None if fit is None else r.strings("fit_args"), retried=r.opt_text("retried"),
                        switch_over=_read_switch(switch), planned_ram=_report_bytes(r.doc.get("planned_ram")),
                        rpc_devices=_read_rpc_devices(r.doc.get("rpc_devices")),
                        chat_template=_read_chat_template(r), tools=tools_from_json(r.doc.get("tools")))


def _read_chat_template(r: FieldReader) -> ChatTemplateRecord | None:
    """``chat_template``, which older documents lack; the server is started with it, so a damaged one is a damaged
    record (exit 2), never silently the model's own template."""
    doc = r.opt_obj("chat_template")
    if doc is None:
        return None
    return ChatTemplateRecord(path=doc.opt_text("path"), family=doc.text("family"), fixes=doc.strings("fixes"),
                              source_sha256=doc.text("source_sha256"), problem=doc.opt_text("problem"))


def _read_rpc_devices(doc: Any) -> tuple[RpcDeviceRecord, ...]:
    """A record for reruns only: a missing or unreadable list is empty (the workers are asked again)."""
    if not isinstance(doc, list):
        return ()
    out = []
    for item in doc:
        values = [item.get(k) for k in ("name", "endpoint", "total_mib", "free_mib")] if isinstance(item, dict) else []
        if len(values) != 4 or not all(isinstance(v, str) for v in values[:2]) or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values[2:]):
            return ()
        out.append(RpcDeviceRecord(*values))
    return tuple(out)


def _report_bytes(value: Any) -> int | None:
    """A figure kept for reports only: anything but a non-negative integer reads as None, never as a damaged record."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _read_switch(doc: Any) -> SwitchRecord | None:
    """A report only: a missing or unreadable one is None, never a reason to reject the record."""
    if not isinstance(doc, dict):
        return None
    gap, load = doc.get("gap_s"), doc.get("load_s")
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in (gap, load))
    return SwitchRecord(float(gap), float(load)) if numbers else None


def _read_rpc(request: FieldReader) -> tuple[str, ...]:
    """``request.rpc``, which older documents lack; each endpoint as ``install --rpc`` accepts it."""
    if request.doc.get("rpc") is None:
        return ()
    endpoints = request.strings("rpc")
    try:
        checked = check_rpc_endpoints(",".join(endpoints)) if endpoints else ()
    except UsageError as exc:
        raise _bad("request.rpc", str(exc)) from None
    return checked


def state_from_json(doc: Any) -> InstallState:
    """Validate a state document; raises ``UsageError`` naming the first bad field."""
    r = FieldReader(doc, "", _bad)
    schema = r.integer("schema")
    if schema > SCHEMA_VERSION:
        raise UsageError(t("state.err_newer", found=schema, supported=SCHEMA_VERSION), t("state.hint_newer"))
    service = r.opt_obj("service")
    request = r.opt_obj("request")
    launcher = r.opt_obj("launcher")
    return InstallState(
        schema=schema, kit_version=r.text("kit_version"), updated=r.text("updated"), system=r.text("system"),
        model_id=r.text("model_id"), quant=r.text("quant"), engine=_read_engine(r.obj("engine")),
        files=tuple(_read_file(f) for f in r.items("files")), server=_read_server(r.obj("server")),
        service=None if service is None else ServiceRecord(service.text("manager"), service.flag("installed")),
        venv_python=r.opt_text("venv_python"),
        request=None if request is None else RequestRecord(request.text("model"), request.text("source"),
                                                                   request.opt_flag("thinking"),
                                                                   request.opt_integer("ctx", minimum=1),
                                                                   _read_rpc(request),
                                                                   request.opt_integer("keep_alive", minimum=-1),
                                                                   preset_from_json(request.doc.get("preset"))),
        launcher=None if launcher is None else LauncherRecord(launcher.text("path"), launcher.text("sha256"),
                                                              launcher.text("target"),
                                                              launcher.opt_text("path_entry")),
        speed=check_from_json(r.doc.get("speed")),  # a report only: absent or unreadable reads as None
        library=tuple(_read_library(m) for m in r.opt_items("library")),
        models_max=r.integer("models_max") if "models_max" in r.doc else 0,
    )


def _read_library(r: FieldReader) -> LibraryModel:
    return LibraryModel(name=r.text("name"), model_id=r.text("model_id"), quant=r.text("quant"),
                        role=r.choice("role", ("chat", "embedding")),
                        files=tuple(_read_file(f) for f in r.items("files")), args=r.strings("args"),
                        request=r.text("request"), source=r.text("source"),
                        planned_ram=_report_bytes(r.doc.get("planned_ram")), chat_template=_read_chat_template(r),
                        tools=tools_from_json(r.doc.get("tools")), preset=preset_from_json(r.doc.get("preset")))


def load_state(home: Home) -> InstallState | None:
    """The install record, or None when nothing is installed in this home; a damaged record is exit 2."""
    def bad(detail: str) -> UsageError:
        return UsageError(t("state.err_field", field="(document)", detail=detail), t("state.hint_damaged"))

    def unreadable(detail: str) -> UsageError:
        return UsageError(t("state.err_read", path=home.state_file, detail=detail), t("state.hint_damaged"))

    raw = read_regular(home.state_file, MAX_STATE_BYTES, bad, missing_ok=True, unreadable=unreadable)
    if raw is None:
        return None
    doc = parse_json(raw, bad)
    return state_from_json(doc)


def require_state(home: Home) -> InstallState:
    """The install record; nothing installed is exit 2 with what to run."""
    state = load_state(home)
    if state is None:
        raise UsageError(t("state.err_none", home=home.root), t("state.hint_none"))
    return state


def launch_spec(state: InstallState, home: Home) -> LaunchSpec:
    """The server start this record describes (what the scripts, the service and verify all use)."""
    model = state.file("model")
    if model is None:
        raise _bad("files", t("state.err_no_model"))
    mmproj = state.file("mmproj")
    kit: tuple[str, ...] = ()
    prompts = system_prompts(state.server.alias, state.request.preset if state.request is not None else None,
                             state.library)
    if state.library or prompts:  # several models, a system prompt: the kit's front (register/router_front.py)
        from bootstrap.register.shell_command import kit_command

        kit = kit_command(home, state.system)
    return LaunchSpec(
        home=home.root, system=state.system, engine_dir=resolve_in_home(home, state.engine.dir),
        server=resolve_in_home(home, state.engine.server), model=resolve_in_home(home, model.path),
        mmproj=None if mmproj is None else resolve_in_home(home, mmproj.path), args=state.server.args,
        alias=state.server.alias, api_key_file=home.api_key_file, host=state.server.host, port=state.server.port,
        others=preset_models(home, state.library, state.models_max, keep_alive_of(state)),
        models_max=state.models_max, kit=kit, chat_template=template_file(home, state.server.chat_template),
        keep_alive_s=keep_alive_of(state), system_prompts=prompts, model_sha256=model.sha256,
    )


def keep_alive_of(state: InstallState) -> int:
    """The keep-alive in force for this install's models (``install --keep-alive``, else the default)."""
    return effective(state.request.keep_alive if state.request is not None else None)


def system_prompts(alias: str, preset: Preset | None,
                   library: tuple[LibraryModel, ...] = ()) -> tuple[tuple[str, str], ...]:
    """The models' system prompts the front adds (``plan/presets.py``): the default model's and each other
    model's, for those that have one."""
    pairs = [(alias, preset), *((m.name, m.preset) for m in library)]
    return tuple((name, p.system) for name, p in pairs if p is not None and p.system)


def template_file(home: Home, record: ChatTemplateRecord | None) -> Path | None:
    """The kit's chat template a record names, as a path (None: the model's own template serves)."""
    return None if record is None or record.path is None else resolve_in_home(home, record.path)


def preset_models(home: Home, library: tuple[LibraryModel, ...], models_max: int,
                  keep_alive_s: int = -1) -> tuple[PresetModel, ...]:
    """The library as the router's preset sees it; all of them load at startup when all fit (``models_max``
    counts the default too), else each loads on its first request."""
    out = []
    for entry in library:
        main = entry.file("model")
        if main is None:
            raise _bad("library", t("state.err_no_model"))
        projector = entry.file("mmproj")
        out.append(PresetModel(entry.name, resolve_in_home(home, main.path),
                               None if projector is None else resolve_in_home(home, projector.path), entry.args,
                               load_on_startup=models_max > len(library),
                               chat_template=template_file(home, entry.chat_template),
                               keep_alive_s=keep_alive_s, model_sha256=main.sha256))
    return tuple(out)


def load_launch_spec(home: Home) -> LaunchSpec:
    """Shortcut for commands that only need to start or check the server."""
    return launch_spec(require_state(home), home)


def load_tools_check(home: Home, name: str | None = None) -> ToolsCheck | None:
    """The tool-call proof recorded for the model served as ``name`` in this home (None: the default model).

    For ``qwenkit launch``: ``None`` when nothing is installed, the model is not installed, or its install predates
    the proof (then it is not known: a client may be tried); else ``ToolsCheck`` with ``.ok`` and ``.reason`` (one of
    ``verify.tools_record.REASONS``), whose printed line is ``verify.tools_check.tools_line``."""
    state = load_state(home)
    return None if state is None else state.tools(name)
