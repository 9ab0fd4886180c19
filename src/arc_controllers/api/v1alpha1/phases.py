"""EphemeralRunner's phase values, in a module without pydantic.

The listener compares and writes ``status.phase`` on raw dicts and needs the values, not the
model: importing them from here keeps pydantic and the CRD models out of its process (issue 20).
`arc_controllers.api.v1alpha1.ephemeralrunner` re-exports the enum beside its model.

Ports: EphemeralRunnerPhase (apis/actions.github.com/v1alpha1/ephemeralrunner_types.go)
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["EphemeralRunnerPhase"]


class EphemeralRunnerPhase(StrEnum):
    """Values of ``status.phase``: a superset of the pod phases with a narrower meaning.

    Ports: EphemeralRunnerPhase
    """

    PENDING = "Pending"
    """No job assigned yet: still starting, or registered and idle."""
    RUNNING = "Running"
    """A job is assigned and executing; written by the listener (#4646)."""
    SUCCEEDED = "Succeeded"
    """The job ran and the runner is gone from the service."""
    FAILED = "Failed"
    """The runner could not start after repeated attempts; needs a human."""
    OUTDATED = "Outdated"
    """The runner rejected its version (exit code 7); the runner spec must change."""
