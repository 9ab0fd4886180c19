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
