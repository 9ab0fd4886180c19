"""Settings for the listener, set on the AutoscalingRunnerSet and carried to the listener's config.

Ports: apis/actions.github.com/v1alpha1/listenerconfig_types.go
"""

from __future__ import annotations

from typing import Annotated

from arc_controllers import constants
from arc_controllers.api.v1alpha1._base import ArcModel
from arc_controllers.api.v1alpha1._markers import Minimum

__all__ = ["ListenerConfig", "ScalerConfig"]


def _positive_or(value: int | None, default: int) -> int:
    return value if value is not None and value >= 1 else default


class ScalerConfig(ArcModel):
    """The Kubernetes client the listener's scaler uses to patch the EphemeralRunnerSet.

    Ports: ScalerConfig
    """

    qps: Annotated[int | None, Minimum(1)] = None
    """Requests per second the scaler may send (default 50)."""
    burst: Annotated[int | None, Minimum(1)] = None
    """Requests the scaler may send at once above qps (default 100)."""
    workers: Annotated[int | None, Minimum(1)] = None
    """Concurrent workers handling job events (default 10)."""

    def effective_qps(self) -> int:
        """``qps``, or 50 when unset or below 1 (the listener warns about the latter).

        Ports: the listener's defaulting of ScalerConfig.QPS
        """
        return _positive_or(self.qps, constants.DEFAULT_SCALER_QPS)

    def effective_burst(self) -> int:
        """``burst``, or 100 when unset or below 1.

        Ports: the listener's defaulting of ScalerConfig.Burst
        """
        return _positive_or(self.burst, constants.DEFAULT_SCALER_BURST)

    def effective_workers(self) -> int:
        """``workers``, or 10 when unset or below 1.

        Ports: the listener's defaulting of ScalerConfig.Workers
        """
        return _positive_or(self.workers, constants.DEFAULT_SCALER_WORKERS)


class ListenerConfig(ArcModel):
    """Configuration of the listener pod's own behaviour.

    Ports: ListenerConfig
    """

    scaler: ScalerConfig | None = None
    """The scaler's Kubernetes client limits."""

    def get_scaler(self) -> ScalerConfig | None:
        """``scaler``, or None.

        Ports: ListenerConfig.GetScaler
        """
        return self.scaler
