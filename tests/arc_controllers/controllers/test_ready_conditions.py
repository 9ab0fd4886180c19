"""controllers.conditions: Ready written only on change, Warning Events on False, pruning seen once.

Beyond: ARC #2633, #4337: errors were visible only in the controller's log.
"""

from __future__ import annotations

import json
from typing import Any

from arc_controllers.actions.config import InvalidGitHubConfigURLError
from arc_controllers.actions.errors import ActionsError
from arc_controllers.controllers.conditions import ReadyConditions, failure_of, ready_condition, stable_error_text
from reconcilekit.errors import ConflictError, from_status
from reconcilekit.testing import FakeRecorder

ROLES_403 = (
    'roles.rbac.authorization.k8s.io is forbidden: User "system:serviceaccount:arc:arc-gha-rs-controller"'
    ' cannot create resource "roles" in API group "rbac.authorization.k8s.io" in the namespace "runners"'
)


class _StatusWriter:
    def __init__(self, owner: _PruningClient) -> None:
        self.owner = owner

    async def patch(self, obj: dict[str, Any], patch: Any, /) -> dict[str, Any]:
        self.owner.patches.append(json.loads(patch.data(obj)))
        if self.owner.prune:  # what the API server does with a field its CRD lacks
            obj.get("status", {}).pop("conditions", None)
        obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)
        return obj


class _PruningClient:
    """Python only: just the status writer, recording each patch's body."""

    def __init__(self, *, prune: bool) -> None:
        self.prune = prune
        self.patches: list[dict[str, Any]] = []

    def status(self) -> _StatusWriter:
        return _StatusWriter(self)


def listener() -> dict[str, Any]:
    meta = {"name": "l", "namespace": "arc", "uid": "u1", "resourceVersion": "1", "generation": 2}
    return {"apiVersion": "actions.github.com/v1alpha1", "kind": "AutoscalingListener", "metadata": meta}


async def test_ready_is_patched_only_when_it_changes_with_the_lock_arc_2633() -> None:
    client, recorder = _PruningClient(prune=False), FakeRecorder()
    ready = ReadyConditions(client=client, recorder=recorder)  # type: ignore[arg-type]
    obj = listener()
    for _ in range(3):
        await ready.set(obj, status="False", reason="Forbidden", message="no roles")
    assert len(client.patches) == 1
    assert client.patches[0]["metadata"]["resourceVersion"] == "1"  # the optimistic lock
    assert [(e.type, e.reason, e.message) for e in recorder.events] == [("Warning", "Forbidden", "no roles")]
    condition = ready_condition(obj)
    assert condition is not None
    assert (condition["status"], condition["reason"], condition["observedGeneration"]) == ("False", "Forbidden", 2)
    await ready.set(obj, status="True", reason="Running", message="runs")
    assert len(client.patches) == 2
    assert len(recorder.events) == 1  # no Warning for True


async def test_pruned_conditions_stop_the_patches_after_one_arc_2633() -> None:
    """Go ARC's CRD drops status.conditions: one patch shows it, then no more, whatever changes."""
    client, recorder = _PruningClient(prune=True), FakeRecorder()
    ready = ReadyConditions(client=client, recorder=recorder)  # type: ignore[arg-type]
    obj = listener()
    for reason in ("Forbidden", "Forbidden", "CrashLoopBackOff", "CrashLoopBackOff"):
        await ready.set(obj, status="False", reason=reason, message=reason)
    assert len(client.patches) == 1
    assert ready.pruned
    assert [e.reason for e in recorder.events] == ["Forbidden", "CrashLoopBackOff"]  # Events still go, once each


async def test_fail_names_the_cause_and_never_raises() -> None:
    obj = listener()
    forbidden = from_status(403, json.dumps({"kind": "Status", "reason": "Forbidden", "message": ROLES_403}))
    reason, message = failure_of(forbidden, obj, action="reconcile") or ("", "")
    assert reason == "Forbidden"
    assert message == (
        'AutoscalingListener arc/l: reconcile failed: user "system:serviceaccount:arc:arc-gha-rs-controller"'
        ' lacks create on roles.rbac.authorization.k8s.io in namespace "runners"'
    )
    bad_url = InvalidGitHubConfigURLError("'https://github.com': invalid config URL")
    assert failure_of(bad_url, obj, action="reconcile") == (
        "InvalidSpec",
        "AutoscalingListener arc/l: reconcile failed: spec.githubConfigUrl 'https://github.com': invalid config URL",
    )
    service = failure_of(ActionsError("boom", status=500), obj, action="registering")
    assert service is not None
    assert service[0] == "ActionsServiceError"
    assert "HTTP 500" in service[1]
    assert failure_of(ConflictError(409, "Conflict", "stale"), obj, action="x") is None

    class _Refusing(_PruningClient):
        def status(self) -> Any:
            raise ConflictError(409, "Conflict", "stale")

    ready = ReadyConditions(client=_Refusing(prune=False))  # type: ignore[arg-type]
    await ready.fail(obj, forbidden, action="reconcile")  # the write's conflict is logged, not raised


def test_actions_service_error_message_is_stable_across_requests_arc_2633() -> None:
    """The same cause on two requests gives one message: no request or activity id in it, the
    verb, endpoint, status and the service's text kept (a changing message rewrote the condition
    on every retry and each write started the next pass at once).
    """
    obj = listener()
    url = "https://api.github.com/orgs/o/actions/runners/registration-token"

    def answer(request_id: str, activity: str) -> ActionsError:
        ids = f'activity_id="{activity}", github_request_id="{request_id}"'
        head = f'request POST {url} failed(status="401 Unauthorized", {ids})'
        return ActionsError(f"{head}: failed to get runner registration token (401): Bad credentials", status=401)

    first = failure_of(answer("AAAA1111", "act-1"), obj, action="reconcile")
    second = failure_of(answer("BBBB2222", "act-2"), obj, action="reconcile")
    assert first == second
    assert first is not None
    assert first[1] == (
        "AutoscalingListener arc/l: reconcile failed: the Actions service answered (HTTP 401): request POST"
        f' {url} failed(status="401 Unauthorized"): failed to get runner registration token (401): Bad credentials'
    )
    assert stable_error_text(ActionsError(f"request GET {url} failed: connection refused")) == (
        f"request GET {url} failed: connection refused"
    )


def test_missing_config_secret_is_invalid_spec_naming_the_field_and_secret() -> None:
    """The scale set's githubConfigSecret names no secret: InvalidSpec, ``spec.githubConfigSecret``
    and the secret's namespace/name; another missing object passes (the retry heals it).
    """
    obj = listener()
    obj["spec"] = {"githubConfigSecret": "gone", "autoscalingRunnerSetNamespace": "runners"}
    body = {"kind": "Status", "reason": "NotFound", "message": 'secrets "gone" not found'}
    missing = from_status(404, json.dumps({**body, "details": {"name": "gone", "kind": "secrets"}}))
    assert failure_of(missing, obj, action="reconcile") == (
        "InvalidSpec",
        "AutoscalingListener arc/l: reconcile failed: spec.githubConfigSecret: secret runners/gone does not exist",
    )
    other = from_status(404, json.dumps({**body, "message": 'secrets "x" not found', "details": {"name": "x"}}))
    assert failure_of(other, obj, action="reconcile") is None
