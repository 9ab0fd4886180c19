"""Who is calling: the system info that becomes the User-Agent of every request.

Ports: github.com/actions/scaleset client.go (SystemInfo, userAgent) and common_client.go setUserAgent
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["SCALESET_BUILD_VERSION", "SystemInfo", "user_agent"]

SCALESET_BUILD_VERSION = "v0.4.0"
"""The actions/scaleset release this client follows; both build fields of the
User-Agent carry it, as they do for ARC built against the tagged module."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemInfo:
    """Ports: scaleset.SystemInfo"""

    system: str = "actions-runner-controller"
    """Name of the scale set implementation."""

    version: str = ""
    """Release version of the caller."""

    commit_sha: str = ""
    """Commit the caller was built from."""

    scale_set_id: int = 0
    """Actions-side scale set id; ``0`` until known."""

    subsystem: str = ""
    """``ghalistener`` or ``gha-scale-set-controller``."""


def user_agent(info: SystemInfo) -> str:
    """Return the User-Agent: compact JSON of ``info`` plus build version, build commit and ``kind``.

    Ports: commonClient.setUserAgent
    """
    return json.dumps(
        {
            "system": info.system,
            "version": info.version,
            "commit_sha": info.commit_sha,
            "scale_set_id": info.scale_set_id,
            "subsystem": info.subsystem,
            "build_version": SCALESET_BUILD_VERSION,
            "build_commit_sha": SCALESET_BUILD_VERSION,
            "kind": "scaleset",
        },
        separators=(",", ":"),
    )
