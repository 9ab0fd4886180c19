"""Kubernetes API requests counted at the API server: an audit log at level Metadata, split by user.

The benchmarks start envtest's kube-apiserver with `apiserver_args` (one JSON event per
finished request), note the file's size when the measured window opens (`AuditLog.mark`)
and read what came after. Each event is attributed to a role by `role_of`: the listener
authenticates as its pod's ServiceAccount, the simulator's own client sends an
``arc-sim`` User-Agent, everything else from the admin user is the controller.

Python only: a benchmark helper.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
  - level: Metadata
"""

SIM_USER_AGENT = "arc-sim/benchmark"
"""The User-Agent of the benchmark's own client (the kubelet, the fixtures, the observers)."""


def apiserver_args(folder: Path) -> dict[str, str]:
    """kube-apiserver flags writing a Metadata audit log to ``folder/audit.log``; writes the policy file."""
    folder.mkdir(parents=True, exist_ok=True)
    policy = folder / "audit-policy.yaml"
    policy.write_text(POLICY, encoding="utf-8")
    return {
        "audit-policy-file": str(policy),
        "audit-log-path": str(folder / "audit.log"),
        "audit-log-format": "json",
        "audit-log-maxsize": "0",
    }


@dataclass(frozen=True, slots=True)
class Request:
    """One finished API request."""

    role: str
    """``controller``, ``listener``, ``sim`` or ``apiserver``."""
    user: str
    verb: str
    resource: str
    """``resource`` or ``resource/subresource``; ``-`` for non-resource URLs."""
    namespace: str
    name: str
    code: int
    at: float = 0.0
    """When the API server received the request (Unix seconds; 0 when the event has no timestamp)."""


def _unix(stamp: object) -> float:
    if not isinstance(stamp, str) or not stamp:
        return 0.0
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def role_of(username: str, user_agent: str) -> str:
    """Who sent a request: listener (a ServiceAccount), sim (our client), apiserver (itself), controller."""
    if username.startswith("system:serviceaccount:"):
        return "listener"
    if user_agent.startswith(SIM_USER_AGENT):
        return "sim"
    if username.startswith(("system:apiserver", "system:kube-")):
        return "apiserver"
    return "controller"


def parse_event(event: Mapping[str, Any]) -> Request:
    """A `Request` from one audit event (audit.k8s.io/v1 ``Event``)."""
    user = str((event.get("user") or {}).get("username", ""))
    ref = event.get("objectRef") or {}
    resource = str(ref.get("resource") or "-")
    if ref.get("subresource"):
        resource += "/" + str(ref["subresource"])
    return Request(
        role=role_of(user, str(event.get("userAgent", ""))),
        user=user,
        verb=str(event.get("verb", "")),
        resource=resource,
        namespace=str(ref.get("namespace") or ""),
        name=str(ref.get("name") or ""),
        code=int((event.get("responseStatus") or {}).get("code") or 0),
        at=_unix(event.get("requestReceivedTimestamp")),
    )


def parse_lines(lines: Iterable[str]) -> list[Request]:
    """Every complete event among ``lines`` (a torn last line is skipped)."""
    out = []
    for line in lines:
        line = line.strip()
        if not line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("stage", "ResponseComplete") == "ResponseComplete":
            out.append(parse_event(event))
    return out


def tally(requests: Iterable[Request], *, watches: bool = False) -> dict[str, int]:
    """Requests by ``"<verb> <resource>"`` (watches left out unless ``watches``), most first."""
    counts = collections.Counter(f"{r.verb} {r.resource}" for r in requests if watches or r.verb != "watch")
    return dict(counts.most_common())


class AuditLog:
    """The audit log file of one API server; `mark` opens the window `read` returns.

    Python only: see the module docstring.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0

    def mark(self) -> None:
        """Count requests from now on."""
        self._offset = self.path.stat().st_size if self.path.exists() else 0

    def read(self) -> list[Request]:
        """The requests finished since `mark`."""
        if not self.path.exists():
            return []
        with self.path.open("rb") as f:
            f.seek(self._offset)
            data = f.read()
        return parse_lines(data.decode("utf-8", "replace").splitlines())


FINISH_STEPS = ("succeeded patch", "first delete", "finalize start", "finalizers removed")
"""The steps of a finished runner's end, each measured from its pod's terminated status (`finish_gaps`)."""


def finish_gaps(requests: Iterable[Request]) -> dict[str, list[float]]:
    """Seconds from each runner pod's terminated status to each of `FINISH_STEPS`, one value per runner.

    From the audit log alone: the simulator's last ``pods/status`` patch of a runner is its
    terminated status; then the controller's next ``ephemeralrunners/status`` patch (Succeeded),
    its first ``ephemeralrunners`` DELETE, its ``pods`` DELETE (the finalizer branch has begun),
    and its last ``ephemeralrunners`` PATCH (finalizers removed). The gaps show where the drain
    waits: work-queue backlog before the Succeeded patch, the round trip from the DELETE to the
    finalizer reconcile, the finalizer requests themselves.
    """
    by_name: dict[str, list[Request]] = collections.defaultdict(list)
    for r in requests:
        if r.name and r.verb != "watch":
            by_name[r.name].append(r)
    gaps: dict[str, list[float]] = {step: [] for step in FINISH_STEPS}
    for reqs in by_name.values():
        reqs.sort(key=lambda r: r.at)
        ended = [r.at for r in reqs if r.role == "sim" and r.verb == "patch" and r.resource == "pods/status"]
        if not ended:
            continue
        end = ended[-1]
        mine = [r for r in reqs if r.role == "controller" and r.at >= end]

        def first(verb: str, resource: str, rs: list[Request] = mine) -> float | None:
            return next((r.at for r in rs if r.verb == verb and r.resource == resource), None)

        finalized = [r.at for r in mine if r.verb == "patch" and r.resource == "ephemeralrunners"]
        steps = {
            "succeeded patch": first("patch", "ephemeralrunners/status"),
            "first delete": first("delete", "ephemeralrunners"),
            "finalize start": first("delete", "pods"),
            "finalizers removed": finalized[-1] if finalized else None,
        }
        for step, at in steps.items():
            if at is not None:
                gaps[step].append(at - end)
    return gaps
