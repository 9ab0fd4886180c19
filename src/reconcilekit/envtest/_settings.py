"""envtest's environment variables, read without importing anything heavy.

Ports: the environment handling of sigs.k8s.io/controller-runtime/pkg/envtest/server.go
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

__all__ = ["parse_duration", "timeout_from_env", "use_existing_cluster_from_env"]

_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Return the seconds in a Go duration string (``"90s"``, ``"1m30s"``, ``"1.5m"``) or a bare number of seconds.

    Raises:
        ValueError: ``text`` is neither.

    Ports: time.ParseDuration (the unsigned forms envtest's variables use)
    """
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for match in _GO_DURATION.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(text) or not text:
        raise ValueError(f"not a duration: {text!r} (expected e.g. 60s, 1m30s or a number of seconds)")
    return total


def use_existing_cluster_from_env(environ: Mapping[str, str] | None = None) -> bool:
    """Return whether ``USE_EXISTING_CLUSTER`` is ``true`` (any case); every other value means false.

    Ports: envtest's useExistingCluster environment check
    """
    env = os.environ if environ is None else environ
    return env.get("USE_EXISTING_CLUSTER", "").strip().lower() == "true"


def timeout_from_env(environ: Mapping[str, str], name: str, default: float) -> float:
    """Return the duration in the variable ``name`` in seconds, or ``default`` when it is unset or empty.

    Raises:
        ValueError: the variable is set to something that is not a duration (names it).

    Ports: envtest's KUBEBUILDER_CONTROLPLANE_{START,STOP}_TIMEOUT parsing
    """
    raw = environ.get(name)
    if not raw:
        return default
    try:
        seconds = parse_duration(raw)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from err
    if seconds <= 0:
        raise ValueError(f"{name}: must be positive, got {raw!r}")
    return seconds
