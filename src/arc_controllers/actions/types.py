"""The JSON shapes of the Actions service, as dataclasses with a small JSON decoder.

Field names are the wire names in Python spelling; each type reads (`from_wire`) and
writes (`to_wire`) the wire (camelCase) names, ``RunnerSetting`` with its capital R and
``encodedJITConfig`` as the service spells them. Timestamps are aware
datetimes; Go's zero time ``0001-01-01T00:00:00Z`` stands for "unset".

Decoding checks each value's JSON type as Go's decoder does (an integral float passes as an
int, as pydantic let it); ``null`` or a missing key leaves the default; unknown keys are
ignored; a value of the wrong type is a `WireError` naming the field, never the value.
Python only: plain dataclasses rather than pydantic keep pydantic (≈ 9 MiB) out of the
listener process, which decodes only these shapes (issue 20).

Ports: github.com/actions/scaleset types.go
"""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Self, TypeVar

__all__ = [
    "DEFAULT_RUNNER_GROUP",
    "NIL_SESSION_ID",
    "ZERO_TIME",
    "JobAssigned",
    "JobAvailable",
    "JobCompleted",
    "JobMessageBase",
    "JobStarted",
    "Label",
    "MessageType",
    "RunnerGroup",
    "RunnerReference",
    "RunnerScaleSet",
    "RunnerScaleSetJitRunnerConfig",
    "RunnerScaleSetJitRunnerSetting",
    "RunnerScaleSetMessage",
    "RunnerScaleSetSession",
    "RunnerScaleSetStatistic",
    "RunnerSetting",
    "WireError",
    "decode_wire",
    "format_go_time",
    "parse_runner_scale_set_message",
]

DEFAULT_RUNNER_GROUP = "default"
"""Name of the runner group every organization has."""

ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)
"""Go's zero ``time.Time``: the value of a timestamp that is not set."""

NIL_SESSION_ID = uuid.UUID(int=0)
"""The all-zero session id a session-create request carries."""

RUNNER_SCALE_SET_JOB_MESSAGES = "RunnerScaleSetJobMessages"
"""The only message type the listener accepts."""


def format_go_time(value: datetime) -> str:
    """Format ``value`` as Go's JSON encoder does: RFC 3339 in UTC with a ``Z``.

    Python only: ``datetime.isoformat`` writes ``+00:00``.
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    elif value.utcoffset():
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None).isoformat() + "Z"


class WireError(ValueError):
    """A JSON value that does not fit its type: the message names the field path and the JSON type, not the value.

    Python only: Go's ``json.Unmarshal`` errors.
    """


_Decoder = Callable[[object, str], Any]
_T = TypeVar("_T")


def _decode_int(value: object, path: str) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise WireError(f"{path}: expected an integer, got {_json_type(value)}")
    return value


def _decode_str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise WireError(f"{path}: expected a string, got {_json_type(value)}")
    return value


def _decode_bool(value: object, path: str) -> bool:
    if not isinstance(value, bool):
        raise WireError(f"{path}: expected a boolean, got {_json_type(value)}")
    return value


def _decode_time(value: object, path: str) -> datetime:
    """An RFC 3339 timestamp; one without an offset is taken as UTC (Go requires the offset)."""
    text = _decode_str(value, path)
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise WireError(f"{path}: expected an RFC 3339 timestamp") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _decode_uuid(value: object, path: str) -> uuid.UUID:
    try:
        return uuid.UUID(_decode_str(value, path))
    except ValueError:
        raise WireError(f"{path}: expected a UUID") from None


def _json_type(value: object) -> str:
    """The JSON name of ``value``'s type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


_SCALARS: dict[object, _Decoder] = {
    int: _decode_int,
    str: _decode_str,
    bool: _decode_bool,
    datetime: _decode_time,
    uuid.UUID: _decode_uuid,
}


def _decoder(annotation: object) -> _Decoder:
    """The decoder of one resolved field annotation (scalars, ``X | None``, ``list[X]``, wire types)."""
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union) and len(args) == 2 and type(None) in args:
        inner = _decoder(next(arg for arg in args if arg is not type(None)))
        return lambda value, path: None if value is None else inner(value, path)
    if origin is list and len(args) == 1:
        item = _decoder(args[0])

        def decode_list(value: object, path: str) -> list[Any]:
            if not isinstance(value, list):
                raise WireError(f"{path}: expected an array, got {_json_type(value)}")
            return [item(entry, f"{path}[{index}]") for index, entry in enumerate(value)]

        return decode_list
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        wire_type = annotation
        return lambda value, path: _decode_object(wire_type, value, path)
    raise TypeError(f"no wire decoder for {annotation!r}")  # a programming error in this module


_PLANS: dict[type[Any], tuple[tuple[str, str, _Decoder], ...]] = {}
"""Python only: per wire type, its (field name, wire name, decoder) triples, built on first decode."""


def _wire_name(f: dataclasses.Field[Any]) -> str:
    """The field's wire name: its ``wire`` metadata, else the camelCase of its name."""
    explicit: str | None = f.metadata.get("wire")
    if explicit is not None:
        return explicit
    head, *rest = f.name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _plan(cls: type[Any]) -> tuple[tuple[str, str, _Decoder], ...]:
    plan = _PLANS.get(cls)
    if plan is None:
        hints = typing.get_type_hints(cls)
        plan = tuple((f.name, _wire_name(f), _decoder(hints[f.name])) for f in dataclasses.fields(cls))
        _PLANS[cls] = plan
    return plan


def _decode_object(cls: type[_T], value: object, path: str) -> _T:
    if not isinstance(value, dict):
        raise WireError(f"{path}: expected an object, got {_json_type(value)}")
    values: dict[str, Any] = {}
    for name, wire, decode in _plan(cls):
        raw = value.get(wire)
        if raw is not None:
            values[name] = decode(raw, f"{path}.{wire}")
    try:
        return cls(**values)
    except TypeError:  # a required field is missing (its key absent or null)
        missing = [wire for name, wire, _ in _plan(cls) if name not in values]
        raise WireError(f"{path}: missing {', '.join(missing)}") from None


def decode_wire(cls: type[_T], body: bytes | str) -> _T:
    """Decode the JSON document ``body`` as the wire type ``cls``.

    Raises:
        ValueError: ``body`` is not JSON (`json.JSONDecodeError`) or does not fit ``cls`` (`WireError`).

    Python only: pydantic's ``model_validate_json``.
    """
    return _decode_object(cls, _loads(body, cls.__name__), cls.__name__)


def _loads(body: bytes | str, what: str) -> Any:
    """Python only: `json.loads`, with a document nested past the interpreter's limit as a `WireError`."""
    try:
        return json.loads(body)
    except RecursionError:
        raise WireError(f"{what}: JSON nested too deeply") from None


def _encode(value: object) -> Any:
    """Python only: one field value as JSON (pydantic's ``mode="json"`` dump)."""
    if isinstance(value, _Wire):
        return value.to_wire()
    if isinstance(value, datetime):
        return format_go_time(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list):
        return [_encode(item) for item in value]
    return value


@dataclass(kw_only=True)
class _Wire:
    """Python only: the shared behaviour of every wire type."""

    @classmethod
    def from_wire(cls, value: object) -> Self:
        """Decode a JSON object (already parsed) as this type.

        Raises:
            WireError: a value of the wrong JSON type, or a required key missing.
        """
        return _decode_object(cls, value, cls.__name__)

    def to_wire(self) -> dict[str, Any]:
        """Return the JSON object the Go side sends for this value (every field, by wire name)."""
        return {_wire_name(f): _encode(getattr(self, f.name)) for f in dataclasses.fields(self)}


class MessageType(enum.StrEnum):
    """Kinds of job message inside a batched message body.

    Ports: scaleset.MessageType
    """

    JOB_AVAILABLE = "JobAvailable"
    JOB_ASSIGNED = "JobAssigned"
    JOB_STARTED = "JobStarted"
    JOB_COMPLETED = "JobCompleted"


@dataclass(kw_only=True)
class Label(_Wire):
    """Ports: scaleset.Label"""

    type: str = "System"
    """Label type; the client fills ``System`` when empty."""

    name: str
    """Label text that workflows put in ``runs-on``."""


@dataclass(kw_only=True)
class RunnerGroup(_Wire):
    """Ports: scaleset.RunnerGroup"""

    id: int = 0
    name: str = ""
    size: int = 0
    is_default_group: bool = False


@dataclass(kw_only=True)
class RunnerSetting(_Wire):
    """Ports: scaleset.RunnerSetting"""

    disable_update: bool = False
    """The runner must not update itself (ARC always sets it)."""

    def to_wire(self) -> dict[str, Any]:
        """Ports: RunnerSetting's JSON tags (``disableUpdate`` omitted when false)"""
        return {"disableUpdate": True} if self.disable_update else {}


@dataclass(kw_only=True)
class RunnerScaleSetStatistic(_Wire):
    """Job and runner counts of one scale set, as the service sees them.

    Ports: scaleset.RunnerScaleSetStatistic
    """

    total_available_jobs: int = 0
    total_acquired_jobs: int = 0
    total_assigned_jobs: int = 0
    """Jobs assigned to the scale set: waiting for a runner plus running."""
    total_running_jobs: int = 0
    total_registered_runners: int = 0
    total_busy_runners: int = 0
    total_idle_runners: int = 0


@dataclass(kw_only=True)
class RunnerScaleSet(_Wire):
    """Ports: scaleset.RunnerScaleSet"""

    id: int = 0
    name: str = ""
    runner_group_id: int = 0
    runner_group_name: str = ""
    labels: list[Label] = field(default_factory=list)
    runner_setting: RunnerSetting = field(default_factory=RunnerSetting, metadata={"wire": "RunnerSetting"})
    created_on: datetime = ZERO_TIME
    runner_jit_config_url: str = ""
    statistics: RunnerScaleSetStatistic | None = None

    def to_wire(self) -> dict[str, Any]:
        """Return the body Go sends: empty fields omitted, ``RunnerSetting`` and ``createdOn`` always.

        Ports: RunnerScaleSet's ``omitempty`` JSON tags
        """
        out: dict[str, Any] = {}
        if self.id:
            out["id"] = self.id
        if self.name:
            out["name"] = self.name
        if self.runner_group_id:
            out["runnerGroupId"] = self.runner_group_id
        if self.runner_group_name:
            out["runnerGroupName"] = self.runner_group_name
        if self.labels:
            out["labels"] = [label.to_wire() for label in self.labels]
        out["RunnerSetting"] = self.runner_setting.to_wire()
        out["createdOn"] = format_go_time(self.created_on)
        if self.runner_jit_config_url:
            out["runnerJitConfigUrl"] = self.runner_jit_config_url
        if self.statistics is not None:
            out["statistics"] = self.statistics.to_wire()
        return out


@dataclass(kw_only=True)
class RunnerReference(_Wire):
    """A registered runner.

    Ports: scaleset.RunnerReference
    """

    id: int = 0
    name: str = ""
    runner_scale_set_id: int = 0


@dataclass(kw_only=True)
class RunnerScaleSetJitRunnerSetting(_Wire):
    """The body of a generate-JIT-config call.

    Ports: scaleset.RunnerScaleSetJitRunnerSetting
    """

    name: str
    """Runner name: ARC passes the EphemeralRunner's name."""

    work_folder: str = ""
    """Work directory inside the runner; ``""`` for the default."""


@dataclass(kw_only=True)
class RunnerScaleSetJitRunnerConfig(_Wire):
    """A minted JIT config. ``encoded_jit_config`` is a secret: never log it.

    Ports: scaleset.RunnerScaleSetJitRunnerConfig
    """

    runner: RunnerReference | None = None
    encoded_jit_config: str = field(default="", repr=False, metadata={"wire": "encodedJITConfig"})


@dataclass(kw_only=True)
class RunnerScaleSetSession(_Wire):
    """A message session. ``message_queue_access_token`` is a secret.

    Ports: scaleset.RunnerScaleSetSession
    """

    session_id: uuid.UUID = NIL_SESSION_ID
    owner_name: str = ""
    runner_scale_set: RunnerScaleSet | None = None
    message_queue_url: str = ""
    message_queue_access_token: str = field(default="", repr=False)
    statistics: RunnerScaleSetStatistic | None = None

    def to_wire(self) -> dict[str, Any]:
        """Ports: RunnerScaleSetSession's ``omitempty`` JSON tags (the zero UUID is still written)"""
        out: dict[str, Any] = {"sessionId": str(self.session_id)}
        if self.owner_name:
            out["ownerName"] = self.owner_name
        if self.runner_scale_set is not None:
            out["runnerScaleSet"] = self.runner_scale_set.to_wire()
        if self.message_queue_url:
            out["messageQueueUrl"] = self.message_queue_url
        if self.message_queue_access_token:
            out["messageQueueAccessToken"] = self.message_queue_access_token
        if self.statistics is not None:
            out["statistics"] = self.statistics.to_wire()
        return out


@dataclass(kw_only=True)
class JobMessageBase(_Wire):
    """Fields every job message carries.

    Ports: scaleset.JobMessageBase
    """

    message_type: str
    runner_request_id: int = 0
    repository_name: str = ""
    owner_name: str = ""
    job_id: str = ""
    job_workflow_ref: str = ""
    job_display_name: str = ""
    workflow_run_id: int = 0
    event_name: str = ""
    request_labels: list[str] | None = None
    queue_time: datetime = ZERO_TIME
    scale_set_assign_time: datetime = ZERO_TIME
    runner_assign_time: datetime = ZERO_TIME
    finish_time: datetime = ZERO_TIME


@dataclass(kw_only=True)
class JobAvailable(JobMessageBase):
    """Ports: scaleset.JobAvailable"""

    message_type: str = MessageType.JOB_AVAILABLE.value
    acquire_job_url: str = ""


@dataclass(kw_only=True)
class JobAssigned(JobMessageBase):
    """Ports: scaleset.JobAssigned"""

    message_type: str = MessageType.JOB_ASSIGNED.value


@dataclass(kw_only=True)
class JobStarted(JobMessageBase):
    """Ports: scaleset.JobStarted"""

    message_type: str = MessageType.JOB_STARTED.value
    runner_id: int = 0
    runner_name: str = ""


@dataclass(kw_only=True)
class JobCompleted(JobMessageBase):
    """Ports: scaleset.JobCompleted"""

    message_type: str = MessageType.JOB_COMPLETED.value
    result: str = ""
    """``succeeded``, ``failed``, ``canceled``…"""
    runner_id: int = 0
    runner_name: str = ""


@dataclass(kw_only=True)
class RunnerScaleSetMessage:
    """One batched message, decoded.

    Ports: scaleset.RunnerScaleSetMessage
    """

    message_id: int
    statistics: RunnerScaleSetStatistic | None = None
    """Counts at the time the message was built; ``None`` when the service sent none."""
    job_available_messages: list[JobAvailable] = field(default_factory=list)
    job_assigned_messages: list[JobAssigned] = field(default_factory=list)
    job_started_messages: list[JobStarted] = field(default_factory=list)
    job_completed_messages: list[JobCompleted] = field(default_factory=list)


_BY_TYPE: dict[str, tuple[type[JobMessageBase], str]] = {
    MessageType.JOB_AVAILABLE: (JobAvailable, "job_available_messages"),
    MessageType.JOB_ASSIGNED: (JobAssigned, "job_assigned_messages"),
    MessageType.JOB_STARTED: (JobStarted, "job_started_messages"),
    MessageType.JOB_COMPLETED: (JobCompleted, "job_completed_messages"),
}


def parse_runner_scale_set_message(body: bytes) -> RunnerScaleSetMessage:
    """Decode a get-message answer and the job-message array in its ``body`` string.

    Unknown job message types are skipped.

    Raises:
        ValueError: not JSON, a ``messageType`` other than
            ``RunnerScaleSetJobMessages``, or a malformed job message.

    Ports: parseRunnerScaleSetMessageResponse
    """
    wire = _loads(body, "RunnerScaleSetMessage")
    if not isinstance(wire, dict):
        raise ValueError("failed to decode runner scale set message response: not an object")
    if wire.get("messageType") != RUNNER_SCALE_SET_JOB_MESSAGES:
        kind = wire.get("messageType")
        # Echoed only as a type name could look (letters only): a broken service could put a token there.
        shown = kind if isinstance(kind, str) and kind.isascii() and kind.isalpha() and len(kind) <= 64 else None
        raise ValueError(f"unsupported message type: {shown or '(' + _json_type(kind) + ')'}")
    stats, message_id = wire.get("statistics"), wire.get("messageId")
    message = RunnerScaleSetMessage(
        message_id=0 if message_id is None else _decode_int(message_id, "RunnerScaleSetMessage.messageId"),
        statistics=RunnerScaleSetStatistic.from_wire(stats) if stats is not None else None,
    )
    raw = wire.get("body")
    if raw is not None and not isinstance(raw, str):
        raise WireError(f"RunnerScaleSetMessage.body: expected a string, got {_json_type(raw)}")
    batch = _loads(raw, "RunnerScaleSetMessage.body") if raw else []
    if not isinstance(batch, list):
        raise ValueError("failed to unmarshal batched messages: not an array")
    for item in batch:
        if not isinstance(item, dict):
            raise ValueError("failed to decode job message type: not an object")
        known = _BY_TYPE.get(str(item.get("messageType", "")))
        if known is None:
            continue
        model, attr = known
        getattr(message, attr).append(model.from_wire(item))
    return message
