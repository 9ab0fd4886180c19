"""reconcilekit.errors: the Status-to-error mapping and apimachinery's predicates."""

from __future__ import annotations

import json

import pytest

from reconcilekit import errors


def status(code: int, reason: str, **extra: object) -> bytes:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": "m",
            **extra,
        }
    ).encode()


def test_already_exists_is_not_a_conflict() -> None:
    """A 409 with reason AlreadyExists is AlreadyExists, never a conflict."""
    err = errors.from_status(409, status(409, "AlreadyExists"))
    assert isinstance(err, errors.AlreadyExistsError)
    assert errors.is_already_exists(err)
    assert not errors.is_conflict(err)


def test_unknown_reason_falls_back_to_the_code() -> None:
    """An unknown reason with 409 counts as a conflict; a known other reason does not."""
    assert errors.is_conflict(errors.from_status(409, status(409, "SomethingNew")))
    assert errors.is_conflict(errors.from_status(409, b"not json"))
    assert not errors.is_conflict(errors.from_status(409, status(409, "Invalid")))


def test_too_many_requests_matches_any_429() -> None:
    """IsTooManyRequests is true for code 429 whatever the reason, and keeps Retry-After."""
    err = errors.from_status(429, status(429, "Other"), retry_after=3)
    assert errors.is_too_many_requests(err)
    with_details = errors.from_status(429, status(429, "TooManyRequests", details={"retryAfterSeconds": 2}))
    assert isinstance(with_details, errors.TooManyRequestsError)
    assert with_details.retry_after == 2


def test_predicates_see_through_cause_chains() -> None:
    """An API error wrapped as ``__cause__`` is still recognised."""
    outer = RuntimeError("wrapped")
    outer.__cause__ = errors.from_status(404, status(404, "NotFound"))
    assert errors.is_not_found(outer)
    assert errors.ignore_not_found(outer) is None


@pytest.mark.parametrize(("reason", "expired", "gone"), [("Expired", True, False), ("Gone", False, True)])
def test_expired_and_gone_are_distinct(reason: str, expired: bool, gone: bool) -> None:
    """IsResourceExpired is reason Expired only; IsGone is reason Gone (or unknown + 410)."""
    err = errors.from_status(410, status(410, reason))
    assert errors.is_resource_expired(err) is expired
    assert errors.is_gone(err) is gone


# 403 messages as kube-apiserver 1.30 sends them (captured from envtest's kube-apiserver under ARC's
# chart RBAC; the RBAC-reason suffix from a binding to a missing ClusterRole).
ROLES_403 = (
    'roles.rbac.authorization.k8s.io is forbidden: User "system:serviceaccount:arc-system-x1:arc-gha-rs-controller"'
    ' cannot create resource "roles" in API group "rbac.authorization.k8s.io" in the namespace "ns-x1"'
)
NAMED_STATUS_403 = (
    'autoscalingrunnersets.actions.github.com "asrs-1" is forbidden: User "alice" cannot patch resource'
    ' "autoscalingrunnersets/status" in API group "actions.github.com" in the namespace "arc-runners"'
)
CLUSTER_403 = (
    'nodes is forbidden: User "system:serviceaccount:arc:ctl" cannot list resource "nodes" in API group ""'
    ' at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'
)
PATH_403 = 'forbidden: User "system:anonymous" cannot get path "/healthz"'
ESCALATION_403 = (
    'roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["system:authenticated"]) is'
    " attempting to grant RBAC permissions not currently held"
)


def forbidden(message: str) -> errors.APIStatusError:
    body = {"kind": "Status", "code": 403, "reason": "Forbidden", "message": message}
    return errors.from_status(403, json.dumps(body))


def test_forbidden_rule_names_the_missing_rule_arc_2633() -> None:
    """The rule a chart-RBAC 403 lacks, ready for a condition's message."""
    rule = errors.forbidden_rule(forbidden(ROLES_403))
    assert rule == errors.ForbiddenRule(
        user="system:serviceaccount:arc-system-x1:arc-gha-rs-controller",
        verb="create",
        resource="roles",
        group="rbac.authorization.k8s.io",
        namespace="ns-x1",
    )
    assert rule.describe() == (
        'user "system:serviceaccount:arc-system-x1:arc-gha-rs-controller" lacks create on'
        ' roles.rbac.authorization.k8s.io in namespace "ns-x1"'
    )


def test_forbidden_rule_subresource_cluster_scope_and_path() -> None:
    named = errors.forbidden_rule(forbidden(NAMED_STATUS_403))
    assert named is not None
    assert (named.verb, named.resource, named.group, named.namespace) == (
        "patch",
        "autoscalingrunnersets/status",
        "actions.github.com",
        "arc-runners",
    )
    cluster = errors.forbidden_rule(forbidden(CLUSTER_403))
    assert cluster is not None
    assert (cluster.verb, cluster.resource, cluster.group, cluster.namespace) == ("list", "nodes", "", "")
    assert cluster.describe() == 'user "system:serviceaccount:arc:ctl" lacks list on nodes at the cluster scope'
    path = errors.forbidden_rule(forbidden(PATH_403))
    assert path == errors.ForbiddenRule(user="system:anonymous", verb="get", path="/healthz")


def test_forbidden_rule_is_none_for_other_errors() -> None:
    assert errors.forbidden_rule(forbidden(ESCALATION_403)) is None
    assert errors.forbidden_rule(errors.from_status(404, json.dumps({"kind": "Status", "reason": "NotFound"}))) is None
    assert errors.forbidden_rule(ValueError(ROLES_403)) is None
    assert errors.forbidden_rule(None) is None
