"""ARC's ``actions.github.com/v1alpha1`` kinds as pydantic models, and their shared types.

Objects decode from and encode to exactly the JSON the API server stores
(`ArcModel.from_json_dict` / `ArcModel.to_json_dict`); embedded Kubernetes types
(pod templates, references) are plain JSON.

Ports: apis/actions.github.com/v1alpha1 (groupversion_info.go and the *_types.go files)
"""

from arc_controllers.api.v1alpha1 import objects
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
    EphemeralRunnerPhase,
    EphemeralRunnerSpec,
    EphemeralRunnerStatus,
)
from arc_controllers.api.v1alpha1.ephemeralrunnerset import (
    EphemeralRunnerSet,
    EphemeralRunnerSetPhase,
    EphemeralRunnerSetSpec,
    EphemeralRunnerSetStatus,
)
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
from arc_controllers.api.v1alpha1.listenerconfig import ListenerConfig, ScalerConfig
from arc_controllers.api.v1alpha1.version import is_version_allowed

KINDS: tuple[type[ArcModel], ...] = (AutoscalingRunnerSet, EphemeralRunnerSet, EphemeralRunner, AutoscalingListener)
"""The four kinds, in the order the CRD generator writes them."""

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
