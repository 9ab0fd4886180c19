"""ARC's ``actions.github.com/v1alpha1`` kinds as pydantic models, and their shared types.

Objects decode from and encode to exactly the JSON the API server stores
(`ArcModel.from_json_dict` / `ArcModel.to_json_dict`); embedded Kubernetes types
(pod templates, references) are plain JSON.

The package imports its models on first use (PEP 562 ``__getattr__``): the kinds, phases and
`objects` accessors load without pydantic, so a process that works on raw dicts (the listener)
does not pay for the models (issue 20: ≈ 9 MiB with pydantic).

Ports: apis/actions.github.com/v1alpha1 (groupversion_info.go and the *_types.go files)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from arc_controllers.api.v1alpha1 import objects
from arc_controllers.api.v1alpha1.groupversion import GROUP, GROUP_VERSION, VERSION, GroupVersion, PrinterColumn
from arc_controllers.api.v1alpha1.kinds import (
    API_VERSION,
    AUTOSCALING_LISTENER,
    AUTOSCALING_RUNNER_SET,
    CONFIG_MAP,
    EPHEMERAL_RUNNER,
    EPHEMERAL_RUNNER_SET,
    POD,
    ROLE,
    ROLE_BINDING,
    SECRET,
    SERVICE_ACCOUNT,
    Kind,
    PodConditionType,
    PodPhase,
)
from arc_controllers.api.v1alpha1.phases import EphemeralRunnerPhase
from arc_controllers.api.v1alpha1.version import is_version_allowed

if TYPE_CHECKING:
    from arc_controllers.api.v1alpha1._base import ArcModel
    from arc_controllers.api.v1alpha1.appconfig import AppConfig, AppConfigError
    from arc_controllers.api.v1alpha1.autoscalinglistener import (
        AutoscalingListener,
        AutoscalingListenerPhase,
        AutoscalingListenerSpec,
        AutoscalingListenerStatus,
    )
    from arc_controllers.api.v1alpha1.autoscalingrunnerset import (
        AutoscalingRunnerSet,
        AutoscalingRunnerSetPhase,
        AutoscalingRunnerSetSpec,
        AutoscalingRunnerSetStatus,
    )
    from arc_controllers.api.v1alpha1.common import (
        AzureKeyVaultConfig,
        CounterMetric,
        GaugeMetric,
        HistogramMetric,
        MetricsConfig,
        ObjectMeta,
        ProxyConfig,
        ProxyServerConfig,
        ResourceMeta,
        TLSCertificateSource,
        TLSConfig,
        VaultConfig,
        VaultType,
    )
    from arc_controllers.api.v1alpha1.ephemeralrunner import (
        EphemeralRunner,
        EphemeralRunnerSpec,
        EphemeralRunnerStatus,
    )
    from arc_controllers.api.v1alpha1.ephemeralrunnerset import (
        EphemeralRunnerSet,
        EphemeralRunnerSetPhase,
        EphemeralRunnerSetSpec,
        EphemeralRunnerSetStatus,
    )
    from arc_controllers.api.v1alpha1.listenerconfig import ListenerConfig, ScalerConfig

    KINDS: tuple[type[ArcModel], ...]
    """The four kinds, in the order the CRD generator writes them."""

_LAZY: dict[str, str] = {
    "ArcModel": "_base",
    **dict.fromkeys(("AppConfig", "AppConfigError"), "appconfig"),
    **dict.fromkeys(
        ("AutoscalingListener", "AutoscalingListenerPhase", "AutoscalingListenerSpec", "AutoscalingListenerStatus"),
        "autoscalinglistener",
    ),
    **dict.fromkeys(
        ("AutoscalingRunnerSet", "AutoscalingRunnerSetPhase", "AutoscalingRunnerSetSpec", "AutoscalingRunnerSetStatus"),
        "autoscalingrunnerset",
    ),
    **dict.fromkeys(
        (
            "AzureKeyVaultConfig",
            "CounterMetric",
            "GaugeMetric",
            "HistogramMetric",
            "MetricsConfig",
            "ObjectMeta",
            "ProxyConfig",
            "ProxyServerConfig",
            "ResourceMeta",
            "TLSCertificateSource",
            "TLSConfig",
            "VaultConfig",
            "VaultType",
        ),
        "common",
    ),
    **dict.fromkeys(("EphemeralRunner", "EphemeralRunnerSpec", "EphemeralRunnerStatus"), "ephemeralrunner"),
    **dict.fromkeys(
        ("EphemeralRunnerSet", "EphemeralRunnerSetPhase", "EphemeralRunnerSetSpec", "EphemeralRunnerSetStatus"),
        "ephemeralrunnerset",
    ),
    **dict.fromkeys(("ListenerConfig", "ScalerConfig"), "listenerconfig"),
}
"""Python only: each model's name and the module that defines it, imported on first access."""


def __getattr__(name: str) -> Any:
    """A model (or `KINDS`) on first access: its module is imported then, with pydantic.

    Python only: PEP 562; see the module docstring.
    """
    if name == "KINDS":
        value: Any = (
            __getattr__("AutoscalingRunnerSet"),
            __getattr__("EphemeralRunnerSet"),
            __getattr__("EphemeralRunner"),
            __getattr__("AutoscalingListener"),
        )
    elif name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


__all__ = [
    "API_VERSION",
    "AUTOSCALING_LISTENER",
    "AUTOSCALING_RUNNER_SET",
    "CONFIG_MAP",
    "EPHEMERAL_RUNNER",
    "EPHEMERAL_RUNNER_SET",
    "GROUP",
    "GROUP_VERSION",
    "KINDS",
    "POD",
    "ROLE",
    "ROLE_BINDING",
    "SECRET",
    "SERVICE_ACCOUNT",
    "VERSION",
    "AppConfig",
    "AppConfigError",
    "ArcModel",
    "AutoscalingListener",
    "AutoscalingListenerPhase",
    "AutoscalingListenerSpec",
    "AutoscalingListenerStatus",
    "AutoscalingRunnerSet",
    "AutoscalingRunnerSetPhase",
    "AutoscalingRunnerSetSpec",
    "AutoscalingRunnerSetStatus",
    "AzureKeyVaultConfig",
    "CounterMetric",
    "EphemeralRunner",
    "EphemeralRunnerPhase",
    "EphemeralRunnerSet",
    "EphemeralRunnerSetPhase",
    "EphemeralRunnerSetSpec",
    "EphemeralRunnerSetStatus",
    "EphemeralRunnerSpec",
    "EphemeralRunnerStatus",
    "GaugeMetric",
    "GroupVersion",
    "HistogramMetric",
    "Kind",
    "ListenerConfig",
    "MetricsConfig",
    "ObjectMeta",
    "PodConditionType",
    "PodPhase",
    "PrinterColumn",
    "ProxyConfig",
    "ProxyServerConfig",
    "ResourceMeta",
    "ScalerConfig",
    "TLSCertificateSource",
    "TLSConfig",
    "VaultConfig",
    "VaultType",
    "is_version_allowed",
    "objects",
]
