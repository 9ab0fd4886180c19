"""The Ready condition of our AutoscalingRunnerSets and AutoscalingListeners, and its Warning Events.

A reconcile that fails writes ``Ready=False`` with a reason naming the cause (`failure_of`)
before it raises, so the retry with backoff goes on and the operator sees why on the object
(``kubectl get autoscalingrunnersets`` shows the Ready and Reason columns). A status patch
is sent only when the condition changes (same status, reason and message: no request), under
an optimistic lock. Each change to False also records a Warning Event with the same reason and
message, where RBAC allows Events (ARC's chart grants none: the recorder logs one info line
and goes quiet).

Go ARC's own CRDs have no ``status.conditions``: the API server prunes it. `ReadyConditions`
sees the patched object come back without conditions, logs one info line, and writes no more
conditions for that kind (the Events still go).

Beyond: ARC #2633, #4337: a 403 or a failing listener was visible only in the controller's log.

Ports: none; Beyond: ARC #2633, #4337: Go ARC's scale set kinds carry no conditions. The
helpers underneath port k8s.io/apimachinery/pkg/api/meta (`reconcilekit.conditions`).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Final

import structlog

from arc_controllers.actions.config import InvalidGitHubConfigURLError
from arc_controllers.actions.errors import ActionsError
from arc_controllers.api.v1alpha1 import objects
from arc_controllers.api.v1alpha1.condition import READY, ConditionReason
from arc_controllers.api.v1alpha1.objects import mutable_status
from arc_controllers.controllers.patching import LazyCopy
from reconcilekit.client.interfaces import Client, Object
from reconcilekit.conditions import (
    CONDITION_FALSE,
    CONDITION_TRUE,
    Condition,
    find_status_condition,
    new_condition,
    set_status_condition,
)
from reconcilekit.errors import ForbiddenError, InvalidError, NotFoundError, forbidden_rule
from reconcilekit.recorder import EVENT_TYPE_WARNING, EventRecorder

__all__ = ["ReadyConditions", "failure_of", "ready_condition", "stable_error_text"]

log = structlog.get_logger("conditions")

_MESSAGE_LIMIT: Final = 1024
"""Characters of a condition message kept (an Actions error body can be long)."""


_PER_REQUEST_ID: Final = re.compile(r',?\s*(?:activity_id|github_request_id)="[^"]*"')
"""An Actions error's per-request ids in Go's ``failed(status="…", activity_id="…")`` prefix."""


def stable_error_text(err: ActionsError) -> str:
    """Python only: ``err``'s message without the ids that differ on every request.

    The verb, the URL, the status and the service's own error text stay: the same cause gives
    the same text, so the condition is not rewritten on every retry.

    Beyond: ARC #2633: a condition message carrying a request id changed on every try, and each
    rewrite (a status patch, so a watch event) started the next reconcile past the backoff.
    """
    return _PER_REQUEST_ID.sub("", str(err)).replace("failed()", "failed")


def ready_condition(obj: Object) -> Condition | None:
    """Python only: the object's ``Ready`` condition as stored, or None."""
    return find_status_condition(objects.status(obj).get("conditions"), READY)


def _describe(obj: Object) -> str:
    """Python only: ``AutoscalingListener arc-system/name``."""
    return f"{obj.get('kind', 'object')} {objects.namespace(obj)}/{objects.name(obj)}"


def _missing_config_secret(err: NotFoundError, obj: Object) -> str | None:
    """Python only: ``namespace/name`` of ``obj``'s ``spec.githubConfigSecret`` when ``err`` says it is missing.

    A listener reads the secret from its scale set's namespace.
    """
    spec = obj.get("spec") or {}
    wanted = str(spec.get("githubConfigSecret") or "")
    if not wanted:
        return None
    details = err.details
    kind, name = str(details.get("kind") or ""), str(details.get("name") or "")
    if not (kind in ("secrets", "Secret") and name == wanted) and f'secrets "{wanted}" not found' not in err.message:
        return None
    namespace = objects.namespace(obj)
    if obj.get("kind") == "AutoscalingListener":
        namespace = str(spec.get("autoscalingRunnerSetNamespace") or namespace)
    return f"{namespace}/{wanted}"


def failure_of(err: BaseException, obj: Object, *, action: str) -> tuple[str, str] | None:
    """The (reason, message) a failed reconcile of ``obj`` shows, or None for a passing error.

    ``action`` says what the reconcile was doing (``"creating the listener's Role"``). A 403
    names the missing rule with the identity (`reconcilekit.errors.forbidden_rule`); a 422 or
    a value the spec cannot carry is ``InvalidSpec``, and so is a ``spec.githubConfigSecret``
    naming no secret (the message names the secret's namespace/name: the spec points at
    nothing, so the operator fixes the spec or creates the secret). An Actions service failure
    is ``ActionsServiceError``, its message free of per-request ids (`stable_error_text`) so
    that the same cause writes the same condition once. Conflicts, timeouts and the like pass:
    the retry heals them.

    Beyond: ARC #2633, #4337: the message names the object and the verb or field.
    """
    subject = f"{_describe(obj)}: {action} failed"
    if isinstance(err, ForbiddenError):
        rule = forbidden_rule(err)
        if rule is not None:
            return ConditionReason.FORBIDDEN, f"{subject}: {rule.describe()}"
        return ConditionReason.FORBIDDEN, f"{subject}: {err.message}"
    if isinstance(err, InvalidError):
        return ConditionReason.INVALID_SPEC, f"{subject}: {err.message}"
    if isinstance(err, NotFoundError) and (secret := _missing_config_secret(err, obj)) is not None:
        return ConditionReason.INVALID_SPEC, f"{subject}: spec.githubConfigSecret: secret {secret} does not exist"
    if isinstance(err, ActionsError):
        status = f" (HTTP {err.status})" if err.status else ""
        text = stable_error_text(err)
        return ConditionReason.ACTIONS_SERVICE_ERROR, f"{subject}: the Actions service answered{status}: {text}"
    if isinstance(err, InvalidGitHubConfigURLError):
        return ConditionReason.INVALID_SPEC, f"{subject}: spec.githubConfigUrl {err}"
    if isinstance(err, ValueError):
        return ConditionReason.INVALID_SPEC, f"{subject}: {err}"
    return None


@dataclass(kw_only=True)
class ReadyConditions:
    """Writes one kind's ``Ready`` condition when it changes, and a Warning Event when it turns False.

    One per reconciler (so per kind): ``pruned`` is learnt once for the kind.
    """

    client: Client
    """Where the status patches go."""

    recorder: EventRecorder | None = None
    """Warning Events for changes to False; None records none."""

    pruned: bool = False
    """The served CRD drops ``status.conditions`` (Go ARC's): no more condition patches."""

    _warned: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)
    """Python only: per object UID, the (reason, message) of the last Warning Event recorded."""

    async def set(self, obj: Object, *, status: str, reason: str, message: str) -> bool:
        """Set ``Ready`` on ``obj`` (patched in place); True when a status patch was sent.

        No request when the stored condition already says the same. A change to False
        records a Warning Event first (once per reason and message while it stays False).

        Raises:
            reconcilekit.errors.ConflictError: ``obj`` is stale (the optimistic lock); the
                caller's retry reads it again.
        """
        message = message[:_MESSAGE_LIMIT]
        uid = str(objects.meta(obj).get("uid") or "")
        if status == CONDITION_FALSE:
            if self._warned.get(uid) != (reason, message) and self.recorder is not None:
                self.recorder.event(obj, EVENT_TYPE_WARNING, reason, message)
            self._warned[uid] = (reason, message)
        elif status == CONDITION_TRUE:
            self._warned.pop(uid, None)
        if self.pruned:
            return False
        conditions = copy.deepcopy(objects.status(obj).get("conditions") or [])
        wanted = new_condition(
            READY, status, reason=reason, message=message, observed_generation=objects.meta(obj).get("generation")
        )
        if not set_status_condition(conditions, wanted):
            return False
        lazy = LazyCopy(obj)
        mutable_status(lazy.mutate())["conditions"] = conditions
        await self.client.status().patch(obj, lazy.merge_from(optimistic_lock=True))
        if not objects.status(obj).get("conditions"):
            self.pruned = True
            log.info(
                "the served CRD prunes status.conditions (Go ARC's CRD?); conditions are not written for this kind",
                kind=obj.get("kind"),
            )
        return True

    async def fail(self, obj: Object, err: BaseException, *, action: str) -> None:
        """Write ``Ready=False`` for ``err`` when it is a cause an operator acts on (`failure_of`).

        Never raises: the caller re-raises ``err`` (its retry with backoff goes on); a failed
        condition write is logged and left for the next pass.
        """
        found = failure_of(err, obj, action=action)
        if found is None:
            return
        reason, message = found
        try:
            await self.set(obj, status=CONDITION_FALSE, reason=reason, message=message)
        except Exception as write_err:  # the reconcile's own error is the one to report
            log.info("could not write the Ready condition", kind=obj.get("kind"), error=str(write_err))

    def forget(self, obj: Object) -> None:
        """Python only: drop what is remembered about ``obj`` (it is gone)."""
        self._warned.pop(str(objects.meta(obj).get("uid") or ""), None)
