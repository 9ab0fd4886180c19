"""The JSON shapes of the Actions service, as pydantic models.

Field names are the wire names in Python spelling; each model reads and
writes the wire (camelCase) names, ``RunnerSetting`` with its capital R and
``encodedJITConfig`` as the service spells them. Timestamps are aware
datetimes; Go's zero time ``0001-01-01T00:00:00Z`` stands for "unset".

Ports: github.com/actions/scaleset types.go
"""

from __future__ import annotations

import enum
import json
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer
from pydantic.alias_generators import to_camel

__all__ = [
    "DEFAULT_RUNNER_GROUP",
    "NIL_SESSION_ID",
    "ZERO_TIME",
    "GoTime",
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

    Python only: pydantic's own format writes ``+00:00``.
    """
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    elif value.utcoffset():
        value = value.astimezone(UTC)
    return value.replace(tzinfo=None).isoformat() + "Z"


GoTime = Annotated[datetime, PlainSerializer(format_go_time, return_type=str)]
"""A timestamp written the way Go writes ``time.Time``."""


class _Wire(BaseModel):
    """Python only: the shared configuration of every wire model."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        use_attribute_docstrings=True,
        extra="ignore",
    )

    def to_wire(self) -> dict[str, Any]:
        """Return the JSON object the Go side sends for this value.

        Python only: a thin wrapper over ``model_dump(by_alias=True, mode="json")``.
        """
        return self.model_dump(by_alias=True, mode="json")


class MessageType(enum.StrEnum):
    """Kinds of job message inside a batched message body.

    Ports: scaleset.MessageType
    """

    JOB_AVAILABLE = "JobAvailable"
    JOB_ASSIGNED = "JobAssigned"
    JOB_STARTED = "JobStarted"
    JOB_COMPLETED = "JobCompleted"


class Label(_Wire):
    """Ports: scaleset.Label"""

    type: str = "System"
    """Label type; the client fills ``System`` when empty."""

    name: str
    """Label text that workflows put in ``runs-on``."""


class RunnerGroup(_Wire):
    """Ports: scaleset.RunnerGroup"""

    id: int = 0
    name: str = ""
    size: int = 0
    is_default_group: bool = False


class RunnerSetting(_Wire):
    """Ports: scaleset.RunnerSetting"""

    disable_update: bool = False
    """The runner must not update itself (ARC always sets it)."""

    def to_wire(self) -> dict[str, Any]:
        """Ports: RunnerSetting's JSON tags (``disableUpdate`` omitted when false)"""
        return {"disableUpdate": True} if self.disable_update else {}


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


class RunnerScaleSet(_Wire):
    """Ports: scaleset.RunnerScaleSet"""

    id: int = 0
    name: str = ""
    runner_group_id: int = 0
    runner_group_name: str = ""
    labels: list[Label] = Field(default_factory=list)
    runner_setting: RunnerSetting = Field(default_factory=RunnerSetting, alias="RunnerSetting")
    created_on: GoTime = ZERO_TIME
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


class RunnerReference(_Wire):
    """A registered runner.

    Ports: scaleset.RunnerReference
    """

    id: int = 0
    name: str = ""
    runner_scale_set_id: int = 0


class RunnerScaleSetJitRunnerSetting(_Wire):
    """The body of a generate-JIT-config call.

    Ports: scaleset.RunnerScaleSetJitRunnerSetting
    """

    name: str
    """Runner name: ARC passes the EphemeralRunner's name."""

    work_folder: str = ""
    """Work directory inside the runner; ``""`` for the default."""


class RunnerScaleSetJitRunnerConfig(_Wire):
    """A minted JIT config. ``encoded_jit_config`` is a secret: never log it.

    Ports: scaleset.RunnerScaleSetJitRunnerConfig
    """

    runner: RunnerReference | None = None
    encoded_jit_config: str = Field(default="", alias="encodedJITConfig", repr=False)


class RunnerScaleSetSession(_Wire):
    """A message session. ``message_queue_access_token`` is a secret.

    Ports: scaleset.RunnerScaleSetSession
    """

    session_id: uuid.UUID = NIL_SESSION_ID
    owner_name: str = ""
    runner_scale_set: RunnerScaleSet | None = None
    message_queue_url: str = ""
    message_queue_access_token: str = Field(default="", repr=False)
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
    queue_time: GoTime = ZERO_TIME
    scale_set_assign_time: GoTime = ZERO_TIME
    runner_assign_time: GoTime = ZERO_TIME
    finish_time: GoTime = ZERO_TIME


class JobAvailable(JobMessageBase):
    """Ports: scaleset.JobAvailable"""

    message_type: str = MessageType.JOB_AVAILABLE.value
    acquire_job_url: str = ""


class JobAssigned(JobMessageBase):
    """Ports: scaleset.JobAssigned"""

    message_type: str = MessageType.JOB_ASSIGNED.value


class JobStarted(JobMessageBase):
    """Ports: scaleset.JobStarted"""

    message_type: str = MessageType.JOB_STARTED.value
    runner_id: int = 0
    runner_name: str = ""


class JobCompleted(JobMessageBase):
    """Ports: scaleset.JobCompleted"""

    message_type: str = MessageType.JOB_COMPLETED.value
    result: str = ""
    """``succeeded``, ``failed``, ``canceled``…"""
    runner_id: int = 0
    runner_name: str = ""


class RunnerScaleSetMessage(BaseModel):
    """One batched message, decoded.

    Ports: scaleset.RunnerScaleSetMessage
    """

    model_config = ConfigDict(use_attribute_docstrings=True)

    message_id: int
    statistics: RunnerScaleSetStatistic | None = None
    """Counts at the time the message was built; ``None`` when the service sent none."""
    job_available_messages: list[JobAvailable] = Field(default_factory=list)
    job_assigned_messages: list[JobAssigned] = Field(default_factory=list)
    job_started_messages: list[JobStarted] = Field(default_factory=list)
    job_completed_messages: list[JobCompleted] = Field(default_factory=list)


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
    wire = json.loads(body)
    if not isinstance(wire, dict):
        raise ValueError("failed to decode runner scale set message response: not an object")
    if wire.get("messageType") != RUNNER_SCALE_SET_JOB_MESSAGES:
        raise ValueError(f"unsupported message type: {wire.get('messageType')}")
    stats = wire.get("statistics")
    message = RunnerScaleSetMessage(
        message_id=int(wire.get("messageId") or 0),
        statistics=RunnerScaleSetStatistic.model_validate(stats) if stats is not None else None,
    )
    raw = wire.get("body") or ""
    batch = json.loads(raw) if raw else []
    if not isinstance(batch, list):
        raise ValueError("failed to unmarshal batched messages: not an array")
    for item in batch:
        if not isinstance(item, dict):
            raise ValueError("failed to decode job message type: not an object")
        known = _BY_TYPE.get(str(item.get("messageType", "")))
        if known is None:
            continue
        model, attr = known
        getattr(message, attr).append(model.model_validate(item))
    return message
