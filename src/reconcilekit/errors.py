"""Errors raised by reconcilekit, built from the API server's ``Status`` answers.

The tree::

    ReconcileKitError
    ├── APIStatusError                 the server answered with a Status (code, reason, message)
    │   ├── BadRequestError            400  BadRequest
    │   ├── UnauthorizedError          401  Unauthorized
    │   ├── ForbiddenError             403  Forbidden
    │   ├── NotFoundError              404  NotFound
    │   ├── MethodNotAllowedError      405  MethodNotAllowed
    │   ├── ConflictError              409  Conflict (a stale resourceVersion, an apply conflict)
    │   ├── AlreadyExistsError         409  AlreadyExists (not a conflict: see `is_conflict`)
    │   ├── GoneError                  410  Gone, or Expired (a watch or list too old to resume)
    │   ├── InvalidError               422  Invalid (field errors in ``causes``)
    │   ├── TooManyRequestsError       429  TooManyRequests, with ``retry_after`` seconds
    │   ├── InternalError              500  InternalError
    │   └── ServerTimeoutError         504 / 500 ServerTimeout, Timeout
    ├── NoKindMatchError               discovery knows no resource for a group, version and kind
    ├── TransportError                 no answer: the connection failed or the request timed out
    └── TerminalError                  a reconcile error that must not be retried

The ``is_*`` predicates have apimachinery's exact meaning: they look at the Status
``reason`` first and fall back to the HTTP code only when the reason is not one of the
known reasons. So ``is_conflict`` is false for AlreadyExists although both are 409.

Ports: k8s.io/apimachinery/pkg/api/errors (errors.go)
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "KNOWN_REASONS",
    "APIStatusError",
    "AlreadyExistsError",
    "BadRequestError",
    "ConflictError",
    "ForbiddenError",
    "ForbiddenRule",
    "GoneError",
    "InternalError",
    "InvalidError",
    "MethodNotAllowedError",
    "NoKindMatchError",
    "NotFoundError",
    "ReconcileKitError",
    "ServerTimeoutError",
    "TerminalError",
    "TooManyRequestsError",
    "TransportError",
    "UnauthorizedError",
    "forbidden_rule",
    "from_status",
    "ignore_already_exists",
    "ignore_not_found",
    "is_already_exists",
    "is_bad_request",
    "is_conflict",
    "is_forbidden",
    "is_gone",
    "is_internal_error",
    "is_invalid",
    "is_not_found",
    "is_resource_expired",
    "is_server_timeout",
    "is_timeout",
    "is_too_many_requests",
    "is_unauthorized",
    "status_reason",
]

KNOWN_REASONS = frozenset(
    {
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "StoreReadError",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
    }
)
"""The ``metav1.StatusReason`` values apimachinery knows; any other reason is 'unknown'."""


class ReconcileKitError(Exception):
    """Base of every error reconcilekit raises on purpose.

    Python only: a common root so callers can catch the library's errors together.
    """


class APIStatusError(ReconcileKitError):
    """The API server refused a request and said why in a ``Status`` object.

    Attributes:
        code: HTTP status code (e.g. 404).
        reason: ``Status.reason`` ("NotFound"), or "" when the server gave none.
        message: ``Status.message``, human-readable; never contains request bodies.
        details: ``Status.details`` as sent (name, group, kind, causes), or ``{}``.
        status: the whole ``Status`` object as sent.

    Ports: apierrors.StatusError
    """

    def __init__(
        self,
        code: int,
        reason: str = "",
        message: str = "",
        *,
        details: Mapping[str, Any] | None = None,
        status: Mapping[str, Any] | None = None,
    ) -> None:
        self.code = code
        self.reason = reason
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        self.status: dict[str, Any] = dict(status or {})
        super().__init__(f"{code} {reason}: {message}" if reason else f"{code}: {message}")

    @property
    def causes(self) -> list[dict[str, Any]]:
        """``details.causes``: one dict per field error (``field``, ``reason``, ``message``)."""
        causes = self.details.get("causes")
        return list(causes) if isinstance(causes, list) else []


class BadRequestError(APIStatusError):
    """400 BadRequest. Ports: apierrors.NewBadRequest"""


class UnauthorizedError(APIStatusError):
    """401 Unauthorized: no or bad credentials. Ports: apierrors.NewUnauthorized"""


class ForbiddenError(APIStatusError):
    """403 Forbidden: RBAC denied the request. Ports: apierrors.NewForbidden"""


class NotFoundError(APIStatusError):
    """404 NotFound. Ports: apierrors.NewNotFound"""


class MethodNotAllowedError(APIStatusError):
    """405 MethodNotAllowed. Ports: apierrors.NewMethodNotSupported"""


class ConflictError(APIStatusError):
    """409 Conflict: a stale resourceVersion, or a server-side apply ownership conflict.

    Ports: apierrors.NewConflict
    """


class AlreadyExistsError(APIStatusError):
    """409 AlreadyExists: a create of a name that is taken. Not a conflict.

    Ports: apierrors.NewAlreadyExists
    """


class GoneError(APIStatusError):
    """410 Gone or Expired: a resourceVersion older than etcd's compaction window.

    Ports: apierrors.NewGone, apierrors.NewResourceExpired
    """


class InvalidError(APIStatusError):
    """422 Invalid: the object failed validation; ``causes`` lists the fields.

    Ports: apierrors.NewInvalid
    """


class TooManyRequestsError(APIStatusError):
    """429 TooManyRequests (API priority and fairness, or a rate limit).

    Attributes:
        retry_after: seconds the server asked to wait (``Retry-After`` header or
            ``details.retryAfterSeconds``), or ``None``.

    Ports: apierrors.NewTooManyRequests
    """

    def __init__(
        self,
        code: int,
        reason: str = "",
        message: str = "",
        *,
        details: Mapping[str, Any] | None = None,
        status: Mapping[str, Any] | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(code, reason, message, details=details, status=status)
        if retry_after is None:
            raw = self.details.get("retryAfterSeconds")
            retry_after = float(raw) if isinstance(raw, int | float) else None
        self.retry_after = retry_after


class InternalError(APIStatusError):
    """500 InternalError. Ports: apierrors.NewInternalError"""


class ServerTimeoutError(APIStatusError):
    """The server gave up: reason ServerTimeout or Timeout (504).

    Ports: apierrors.NewServerTimeout, apierrors.NewTimeoutError
    """


class NoKindMatchError(ReconcileKitError):
    """API discovery found no resource for a group, version and kind.

    Ports: meta.NoKindMatchError
    """

    def __init__(self, group: str, version: str, kind: str) -> None:
        self.group, self.version, self.kind = group, version, kind
        gv = f"{group}/{version}" if group else version
        super().__init__(f'no matches for kind "{kind}" in version "{gv}"')


class TransportError(ReconcileKitError):
    """The API server gave no answer: connecting failed, the connection broke, or the timeout passed.

    The HTTP library's error is chained as ``__cause__``.

    Python only: client-go returns such errors as url.Error
    """


class TerminalError(ReconcileKitError):
    """Raised by a reconciler to report an error that retrying cannot fix.

    The controller records it (metrics, one log line) and does not requeue.

    Ports: reconcile.TerminalError
    """


_BY_REASON: dict[str, type[APIStatusError]] = {
    "BadRequest": BadRequestError,
    "Unauthorized": UnauthorizedError,
    "Forbidden": ForbiddenError,
    "NotFound": NotFoundError,
    "MethodNotAllowed": MethodNotAllowedError,
    "Conflict": ConflictError,
    "AlreadyExists": AlreadyExistsError,
    "Gone": GoneError,
    "Expired": GoneError,
    "Invalid": InvalidError,
    "TooManyRequests": TooManyRequestsError,
    "InternalError": InternalError,
    "ServerTimeout": ServerTimeoutError,
    "Timeout": ServerTimeoutError,
}
_BY_CODE: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    410: GoneError,
    422: InvalidError,
    429: TooManyRequestsError,
    500: InternalError,
    504: ServerTimeoutError,
}


def from_status(
    code: int, body: bytes | str | Mapping[str, Any] | None, *, retry_after: float | None = None
) -> APIStatusError:
    """Build the most specific error for an HTTP answer of ``code`` with ``body``.

    Args:
        code: the HTTP status code.
        body: the response body: a ``Status`` object (raw JSON or decoded), or
            anything else (then only the code is used).
        retry_after: seconds from a ``Retry-After`` header, if any.

    Returns:
        An `APIStatusError` subclass chosen by reason first, then by code.

    Ports: apierrors.FromObject and the client-go rest result's error
    """
    status: dict[str, Any] = {}
    if isinstance(body, bytes | str):
        try:
            decoded = json.loads(body) if body else None
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            status = decoded
    elif isinstance(body, Mapping):
        status = dict(body)
    if status.get("kind") != "Status":
        status = {}
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or "")
    details = status.get("details") if isinstance(status.get("details"), dict) else {}
    if reason in _BY_REASON:
        cls = _BY_REASON[reason]
    elif reason in KNOWN_REASONS:
        cls = APIStatusError
    else:
        cls = _BY_CODE.get(code, APIStatusError)
    if not message:
        message = f"the server answered {code}" + (f" ({reason})" if reason else "")
    if cls is TooManyRequestsError:
        return TooManyRequestsError(code, reason, message, details=details, status=status, retry_after=retry_after)
    return cls(code, reason, message, details=details, status=status)


def status_reason(err: BaseException | None) -> str:
    """The ``Status.reason`` an error carries (through ``__cause__`` chains), or "".

    Ports: apierrors.ReasonForError
    """
    api = _api_error(err)
    return api.reason if api is not None else ""


def _api_error(err: BaseException | None) -> APIStatusError | None:
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, APIStatusError):
            return err
        seen.add(id(err))
        err = err.__cause__
    return None


def _reason_or_code(err: BaseException | None, reason: str, code: int) -> bool:
    api = _api_error(err)
    if api is None:
        return False
    if api.reason == reason:
        return True
    return api.reason not in KNOWN_REASONS and api.code == code


def is_not_found(err: BaseException | None) -> bool:
    """Reason NotFound, or an unknown reason with code 404. Ports: apierrors.IsNotFound"""
    return _reason_or_code(err, "NotFound", 404)


def is_already_exists(err: BaseException | None) -> bool:
    """Reason AlreadyExists only. Ports: apierrors.IsAlreadyExists"""
    return status_reason(err) == "AlreadyExists"


def is_conflict(err: BaseException | None) -> bool:
    """Reason Conflict, or an unknown reason with code 409. Ports: apierrors.IsConflict"""
    return _reason_or_code(err, "Conflict", 409)


def is_invalid(err: BaseException | None) -> bool:
    """Reason Invalid, or an unknown reason with code 422. Ports: apierrors.IsInvalid"""
    return _reason_or_code(err, "Invalid", 422)


def is_gone(err: BaseException | None) -> bool:
    """Reason Gone, or an unknown reason with code 410. Ports: apierrors.IsGone"""
    return _reason_or_code(err, "Gone", 410)


def is_resource_expired(err: BaseException | None) -> bool:
    """Reason Expired only. Ports: apierrors.IsResourceExpired"""
    return status_reason(err) == "Expired"


def is_bad_request(err: BaseException | None) -> bool:
    """Reason BadRequest, or an unknown reason with code 400. Ports: apierrors.IsBadRequest"""
    return _reason_or_code(err, "BadRequest", 400)


def is_unauthorized(err: BaseException | None) -> bool:
    """Reason Unauthorized, or an unknown reason with code 401. Ports: apierrors.IsUnauthorized"""
    return _reason_or_code(err, "Unauthorized", 401)


def is_forbidden(err: BaseException | None) -> bool:
    """Reason Forbidden, or an unknown reason with code 403. Ports: apierrors.IsForbidden"""
    return _reason_or_code(err, "Forbidden", 403)


def is_internal_error(err: BaseException | None) -> bool:
    """Reason InternalError, or an unknown reason with code 500. Ports: apierrors.IsInternalError"""
    return _reason_or_code(err, "InternalError", 500)


def is_server_timeout(err: BaseException | None) -> bool:
    """Reason ServerTimeout only. Ports: apierrors.IsServerTimeout"""
    return status_reason(err) == "ServerTimeout"


def is_timeout(err: BaseException | None) -> bool:
    """Reason Timeout, or an unknown reason with code 504. Ports: apierrors.IsTimeout"""
    return _reason_or_code(err, "Timeout", 504)


def is_too_many_requests(err: BaseException | None) -> bool:
    """Reason TooManyRequests, or code 429 whatever the reason. Ports: apierrors.IsTooManyRequests"""
    api = _api_error(err)
    return api is not None and (api.reason == "TooManyRequests" or api.code == 429)


def ignore_not_found(err: BaseException | None) -> BaseException | None:
    """``None`` when ``err`` is a NotFound, else ``err``. Ports: client.IgnoreNotFound"""
    return None if is_not_found(err) else err


def ignore_already_exists(err: BaseException | None) -> BaseException | None:
    """``None`` when ``err`` is an AlreadyExists, else ``err``. Ports: client.IgnoreAlreadyExists"""
    return None if is_already_exists(err) else err


@dataclass(frozen=True, kw_only=True)
class ForbiddenRule:
    """The request RBAC refused, as a 403's message names it: the rule the identity lacks.

    Attributes:
        user: the identity refused (``system:serviceaccount:<namespace>:<name>`` for a ServiceAccount).
        verb: the request's verb (``create``, ``list``, ``patch``...).
        resource: the resource, with ``/subresource`` when there is one (``roles``, ``pods/status``);
            "" for a non-resource request.
        group: the API group ("" for the core group).
        namespace: the namespace, or "" at the cluster scope.
        path: a non-resource request's URL path (``/healthz``), else "".

    Python only: apimachinery keeps these in the authorizer's attributes and sends only the message.
    """

    user: str
    verb: str
    resource: str = ""
    group: str = ""
    namespace: str = ""
    path: str = ""

    def describe(self) -> str:
        """The missing rule in one line, for a condition's or an Event's message.

        ``user "system:serviceaccount:arc-system:arc" lacks create on roles.rbac.authorization.k8s.io
        in namespace "arc-runners"``
        """
        if self.path:
            return f'user "{self.user}" lacks {self.verb} on path "{self.path}"'
        qualified = f"{self.resource}.{self.group}" if self.group else self.resource
        scope = f' in namespace "{self.namespace}"' if self.namespace else " at the cluster scope"
        return f'user "{self.user}" lacks {self.verb} on {qualified}{scope}'


_QUOTED = r'"((?:[^"\\]|\\.)*)"'
_RESOURCE_DENIAL = re.compile(
    rf"User {_QUOTED} cannot (\S+) resource {_QUOTED} in API group {_QUOTED}"
    rf"(?: in the namespace {_QUOTED}| at the cluster scope)"
)
_PATH_DENIAL = re.compile(rf"User {_QUOTED} cannot (\S+) path {_QUOTED}")


def _unquote(text: str) -> str:
    """Python only: undo Go's ``%q`` escaping of a name (quotes and backslashes)."""
    return re.sub(r"\\(.)", r"\1", text)


def forbidden_rule(err: BaseException | None) -> ForbiddenRule | None:
    """The rule a 403 from kube-apiserver's authorizer names, or None when ``err`` is no such 403.

    kube-apiserver words every RBAC denial the same way, e.g. ``roles.rbac.authorization.k8s.io is
    forbidden: User "system:serviceaccount:arc-system:arc" cannot create resource "roles" in API
    group "rbac.authorization.k8s.io" in the namespace "arc-runners"`` (``at the cluster scope``
    without a namespace; ``cannot get path "/healthz"`` for a non-resource URL; an RBAC reason may
    follow). A 403 of another kind (an admission webhook, PodSecurity, a privilege escalation
    check) gives None: its message is the whole story.

    Python only: apimachinery has no parser; controllers of ours name the missing rule in a
    status condition. Beyond: ARC #2633: a 403 was visible only in the controller's log.
    """
    api = _api_error(err)
    if api is None or not (api.code == 403 or api.reason == "Forbidden"):
        return None
    found = _RESOURCE_DENIAL.search(api.message)
    if found is not None:
        user, verb, resource, group, namespace = found.groups()
        return ForbiddenRule(
            user=_unquote(user),
            verb=verb,
            resource=_unquote(resource),
            group=_unquote(group),
            namespace=_unquote(namespace or ""),
        )
    found = _PATH_DENIAL.search(api.message)
    if found is not None:
        user, verb, path = found.groups()
        return ForbiddenRule(user=_unquote(user), verb=verb, path=_unquote(path))
    return None
