"""ARC's names and numbers in one place: labels, annotations, finalizers, env vars, defaults.

Every value here is carried over exactly from upstream; a controller, the resource
builder and the listener all meet on these strings, and so do objects written by
ARC's Go controllers, so a changed value breaks upgrades in place.

Durations are seconds (float). Names follow ARC's Go identifiers in Python spelling.

Ports: controllers/actions.github.com/constants.go (and the literals of resourcebuilder.go)
"""

from __future__ import annotations

from typing import Final

# --- Labels ---------------------------------------------------------------

LABEL_KEY_KUBERNETES_PART_OF: Final = "app.kubernetes.io/part-of"
"""Set to `LABEL_VALUE_KUBERNETES_PART_OF` on the listener and the EphemeralRunnerSet."""
LABEL_KEY_KUBERNETES_COMPONENT: Final = "app.kubernetes.io/component"
"""Listener: ``runner-scale-set-listener``; EphemeralRunnerSet: ``runner-set``; EphemeralRunner: ``runner``."""
LABEL_KEY_KUBERNETES_VERSION: Final = "app.kubernetes.io/version"
"""Copied from the AutoscalingRunnerSet's label; drives the version gate (`api.v1alpha1.version`)."""
LABEL_KEY_KUBERNETES_OS: Final = "kubernetes.io/os"
"""Listener pod nodeSelector key; value `LABEL_VALUE_KUBERNETES_OS_LINUX`."""
LABEL_KEY_GITHUB_SCALE_SET_NAME: Final = "actions.github.com/scale-set-name"
LABEL_KEY_GITHUB_SCALE_SET_NAMESPACE: Final = "actions.github.com/scale-set-namespace"
LABEL_KEY_GITHUB_ENTERPRISE: Final = "actions.github.com/enterprise"
LABEL_KEY_GITHUB_ORGANIZATION: Final = "actions.github.com/organization"
LABEL_KEY_GITHUB_REPOSITORY: Final = "actions.github.com/repository"
LABEL_KEY_LISTENER_NAME: Final = "auto-scaling-listener-name"
"""On the listener's Role and RoleBinding (they live in another namespace: no owner reference)."""
LABEL_KEY_LISTENER_NAMESPACE: Final = "auto-scaling-listener-namespace"
LABEL_KEY_RUNNER_TEMPLATE_HASH: Final = "runner-template-hash"
"""Left out of the pod-template hash input."""
LABEL_KEY_POD_TEMPLATE_HASH: Final = "pod-template-hash"
"""Runner pod label: FNV hash of the pod template."""
LABEL_KEY_EPHEMERAL_RUNNER: Final = "actions-ephemeral-runner"
"""Runner pod label, value `LABEL_VALUE_EPHEMERAL_RUNNER`."""
LABEL_VALUE_EPHEMERAL_RUNNER: Final = "True"
LABEL_KEY_RUNNER_POD: Final = "runner-pod"
"""Set by container hooks on the pods and secrets they create for a runner (value: runner name)."""

LABEL_VALUE_KUBERNETES_PART_OF: Final = "gha-runner-scale-set"
LABEL_VALUE_COMPONENT_LISTENER: Final = "runner-scale-set-listener"
LABEL_VALUE_COMPONENT_RUNNER_SET: Final = "runner-set"
LABEL_VALUE_COMPONENT_RUNNER: Final = "runner"
LABEL_VALUE_KUBERNETES_OS_LINUX: Final = "linux"

LABEL_VALUE_MAX_LENGTH: Final = 63
"""Kubernetes' limit on a label value; longer values are trimmed (``trimLabelValue``)."""
LABEL_VALUE_TRIM_KEEP: Final = 58
"""A too-long label value keeps this many characters, then gets `LABEL_VALUE_TRIM_SUFFIX`."""
LABEL_VALUE_TRIM_SUFFIX: Final = "-trim"

# --- Annotations ----------------------------------------------------------

ANNOTATION_KEY_RUNNER_SCALE_SET_ID: Final = "runner-scale-set-id"
"""On the AutoscalingRunnerSet: the Actions scale set id, decimal. Absent, unparseable or <= 0: create one."""
ANNOTATION_KEY_GITHUB_RUNNER_GROUP_NAME: Final = "actions.github.com/runner-group-name"
ANNOTATION_KEY_GITHUB_RUNNER_SCALE_SET_NAME: Final = "actions.github.com/runner-scale-set-name"
ANNOTATION_KEY_PATCH_ID: Final = "actions.github.com/patch-id"
"""On each EphemeralRunner: the set's ``spec.patchID`` when the runner was created."""
ANNOTATION_KEY_ACTIONABLE_REVISION: Final = "actions.github.com/actionable-revision"
"""On each EphemeralRunner: the set's ``spec.actionableRevision`` at creation; missing or unparseable reads as 0."""
ANNOTATION_KEY_REGISTRATION_REMOVED: Final = "actions.github.com/runner-registration-removed"
"""On an EphemeralRunner the set is removing: ``"true"`` once its registration is gone from the service.

Written with the registration finalizer's removal; the runner reconciler never adds a
finalizer back to a runner that carries it. Beyond: no ARC issue; issue 19's finalizer race (a 50-job burst).
"""
ANNOTATION_KEY_AUTOSCALING_RUNNER_SET_GENERATION: Final = "actions.github.com/autoscaling-runner-set-generation"
"""On the EphemeralRunnerSet: the AutoscalingRunnerSet ``metadata.generation`` it was built from (informational)."""
ANNOTATION_KEY_LISTENER_CONFIG_RESOURCE_VERSION: Final = "actions.github.com/listener-config-resource-version"
"""On the listener pod: resourceVersion of the config secret it was built from; a change recreates the pod."""
ANNOTATION_KEY_MANAGER_ROLE_BINDING_NAME: Final = "actions.github.com/cleanup-manager-role-binding"
ANNOTATION_KEY_MANAGER_ROLE_NAME: Final = "actions.github.com/cleanup-manager-role-name"
ANNOTATION_KEY_KUBERNETES_MODE_ROLE_NAME: Final = "actions.github.com/cleanup-kubernetes-mode-role-name"
ANNOTATION_KEY_KUBERNETES_MODE_ROLE_BINDING_NAME: Final = "actions.github.com/cleanup-kubernetes-mode-role-binding-name"
ANNOTATION_KEY_KUBERNETES_MODE_SERVICE_ACCOUNT_NAME: Final = (
    "actions.github.com/cleanup-kubernetes-mode-service-account-name"
)
ANNOTATION_KEY_GITHUB_SECRET_NAME: Final = "actions.github.com/cleanup-github-secret-name"
ANNOTATION_KEY_NO_PERMISSION_SERVICE_ACCOUNT_NAME: Final = (
    "actions.github.com/cleanup-no-permission-service-account-name"
)
ANNOTATION_KEY_INTEGRITY_HASH_OLDER: Final = "actions.github.com/integrity-hash"
"""[OLDER] removed upstream; a live listener still carrying it differs from the desired annotations once."""

CLEANUP_ANNOTATION_KEYS: Final = (
    ANNOTATION_KEY_MANAGER_ROLE_BINDING_NAME,
    ANNOTATION_KEY_MANAGER_ROLE_NAME,
    ANNOTATION_KEY_KUBERNETES_MODE_ROLE_NAME,
    ANNOTATION_KEY_KUBERNETES_MODE_ROLE_BINDING_NAME,
    ANNOTATION_KEY_KUBERNETES_MODE_SERVICE_ACCOUNT_NAME,
    ANNOTATION_KEY_GITHUB_SECRET_NAME,
    ANNOTATION_KEY_NO_PERMISSION_SERVICE_ACCOUNT_NAME,
)
"""The annotations the Helm chart sets on an AutoscalingRunnerSet to name dependents to un-finalize."""

# --- Finalizers -----------------------------------------------------------

AUTOSCALING_RUNNER_SET_FINALIZER_NAME: Final = "autoscalingrunnerset.actions.github.com/finalizer"
AUTOSCALING_RUNNER_SET_CLEANUP_FINALIZER_NAME: Final = "actions.github.com/cleanup-protection"
"""On the Helm-created dependents; removed when the AutoscalingRunnerSet is deleted."""
EPHEMERAL_RUNNER_SET_FINALIZER_NAME: Final = "ephemeralrunnerset.actions.github.com/finalizer"
EPHEMERAL_RUNNER_FINALIZER_NAME: Final = "ephemeralrunner.actions.github.com/finalizer"
EPHEMERAL_RUNNER_ACTIONS_FINALIZER_NAME: Final = "ephemeralrunner.actions.github.com/runner-registration-finalizer"
"""The runner's registration with the Actions service is still to be released."""
AUTOSCALING_LISTENER_FINALIZER_NAME: Final = "autoscalinglistener.actions.github.com/finalizer"

# --- Environment variables ------------------------------------------------

ENV_ACTIONS_RUNNER_INPUT_JITCONFIG: Final = "ACTIONS_RUNNER_INPUT_JITCONFIG"
"""Runner container: from the JIT secret key `JIT_SECRET_KEY_JIT_TOKEN`."""
ENV_GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT: Final = "GITHUB_ACTIONS_RUNNER_EXTRA_USER_AGENT"
"""Runner container: ``actions-runner-controller/<build version>``."""
ENV_ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE: Final = "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE"
"""Runner container: ``1``, so a runner whose version is deprecated exits with `RUNNER_VERSION_DEPRECATED_EXIT_CODE`."""
ENV_ACTIONS_RUNNER_CONTAINER_HOOKS: Final = "ACTIONS_RUNNER_CONTAINER_HOOKS"
"""A runner container with this env var uses container hooks (``EphemeralRunner.has_container_hook_configured``)."""
ENV_HTTP_PROXY: Final = "http_proxy"
ENV_HTTPS_PROXY: Final = "https_proxy"
ENV_NO_PROXY: Final = "no_proxy"
ENV_LISTENER_CONFIG_PATH: Final = "LISTENER_CONFIG_PATH"
"""Listener container: path of its config file, `LISTENER_CONFIG_FILE_PATH`."""
ENV_CONTROLLER_MANAGER_POD_NAMESPACE: Final = "CONTROLLER_MANAGER_POD_NAMESPACE"
"""Controller process: the namespace listeners run in."""
ENV_CONTROLLER_MANAGER_CONTAINER_IMAGE: Final = "CONTROLLER_MANAGER_CONTAINER_IMAGE"
"""Controller process: the listener image."""
ENV_LISTENER_ENTRYPOINT: Final = "LISTENER_ENTRYPOINT"
"""Controller process: overrides the listener command (default `DEFAULT_LISTENER_ENTRYPOINT`)."""

RUNNER_VERSION_DEPRECATED_EXIT_CODE: Final = 7
"""A runner container that exits with this code rejected its runner version: the runner is Outdated."""

# --- Secret keys and file paths ------------------------------------------

JIT_SECRET_KEY_JIT_TOKEN: Final = "jitToken"
JIT_SECRET_KEY_RUNNER_NAME: Final = "runnerName"
JIT_SECRET_KEY_RUNNER_ID: Final = "runnerId"
JIT_SECRET_KEY_SCALE_SET_ID: Final = "scaleSetId"
LISTENER_CONFIG_SECRET_KEY: Final = "config.json"
LISTENER_CONFIG_VOLUME_NAME: Final = "listener-config"
LISTENER_CONFIG_MOUNT_PATH: Final = "/etc/gha-listener"
LISTENER_CONFIG_FILE_PATH: Final = "/etc/gha-listener/config.json"
PROXY_SECRET_KEY_HTTP: Final = "http_proxy"
PROXY_SECRET_KEY_HTTPS: Final = "https_proxy"
PROXY_SECRET_KEY_NO_PROXY: Final = "no_proxy"
PROXY_CREDENTIAL_KEY_USERNAME: Final = "username"
PROXY_CREDENTIAL_KEY_PASSWORD: Final = "password"
GITHUB_SECRET_KEY_TOKEN: Final = "github_token"
GITHUB_SECRET_KEY_APP_ID: Final = "github_app_id"
GITHUB_SECRET_KEY_APP_INSTALLATION_ID: Final = "github_app_installation_id"
GITHUB_SECRET_KEY_APP_PRIVATE_KEY: Final = "github_app_private_key"

# --- Names ----------------------------------------------------------------

EPHEMERAL_RUNNER_CONTAINER_NAME: Final = "runner"
"""The runner container of a runner pod (only the first container of this name is ours)."""
LISTENER_NAME_SUFFIX: Final = "-listener"
LISTENER_CONFIG_SECRET_SUFFIX: Final = "-config"
LISTENER_PROXY_SECRET_SUFFIX: Final = "-proxy"
RUNNER_PROXY_SECRET_SUFFIX: Final = "-runner-proxy"
EPHEMERAL_RUNNER_GENERATE_NAME_SUFFIX: Final = "-runner-"
NAME_HASH_LENGTH: Final = 8
"""Hash suffixes in names keep the first 8 characters of the FNV hash string."""

# --- Timings, limits, defaults; seconds -----------------------------------

AUTOSCALING_RUNNER_SET_DELETION_REQUEUE: Final = 5.0
EPHEMERAL_RUNNER_SET_PROXY_SECRET_DELETION_REQUEUE: Final = 1.0
RUNNER_BATCH_CONCURRENCY: Final = 8
UNRECORDED_RUNNER_ID_GRACE_PERIOD: Final = 60.0
"""[UNCONFIRMED] upstream; unused by this port (docs/porting-notes.md, constants.go)."""
EPHEMERAL_RUNNER_MAX_FAILURES: Final = 5
"""A runner is deleted once ``len(status.failures) > 5``."""
EPHEMERAL_RUNNER_FAILURE_BACKOFF: Final = (0.0, 5.0, 10.0, 20.0, 40.0, 80.0)
"""Requeue delay indexed by ``len(status.failures)``; length is ``EPHEMERAL_RUNNER_MAX_FAILURES + 1``."""
EPHEMERAL_RUNNER_RETRYABLE_JIT_ERROR_REQUEUE: Final = 0.5
EPHEMERAL_RUNNER_CORRUPTED_JIT_SECRET_REQUEUE: Final = 0.5
SUPERSEDED_VERSION_TTL: Final = 5.0
"""Seconds a resourceVersion this process replaced counts as a stale cached copy (`SupersededVersions`).

Longer than any informer lag the controllers wait out; once it passes, the copy is acted on.
"""
EPHEMERAL_RUNNER_POD_ALREADY_EXISTS_REQUEUE: Final = 5.0
EPHEMERAL_RUNNER_RESOURCE_QUOTA_REQUEUE: Final = 30.0
EPHEMERAL_RUNNER_RESOURCE_QUOTA_RECREATE_AGE: Final = 600.0
"""A runner whose pod keeps hitting a resource quota is recreated once it is older than this."""
EPHEMERAL_RUNNER_FAILED_RECYCLE_AGE: Final = 300.0
"""Default seconds after its creation a Failed EphemeralRunner is deleted, so the set replaces it (the README's policy).

The manager's ``--failed-runner-recycle-age`` overrides it.

Beyond: ARC #3014 (also #3685, #4258): runners whose pods admission refused stayed Failed, holding their slots.
"""
DEFAULT_TERMINATED_POD_GRACE_PERIOD_SECONDS: Final = 0
UNREGISTRATION_RETRY_DELAY: Final = 30.0
UNREGISTRATION_MIN_WORKERS: Final = 4
UNREGISTRATION_IDLE_WAIT_CAP: Final = 30.0
LISTENER_SECRET_FINALIZER_POLL: Final = 0.5
LISTENER_RESTART_DELAY: Final = 15.0
"""[UNCONFIRMED] upstream: measured from the container's ``finishedAt`` (docs/porting-notes.md, constants.go)."""
LISTENER_POD_TERMINATION_GRACE_PERIOD_SECONDS: Final = 60
DEFAULT_LISTENER_LOG_LEVEL: Final = "debug"
DEFAULT_LISTENER_LOG_FORMAT: Final = "text"
LISTENER_LOG_LEVELS: Final = ("debug", "info", "warn", "error")
LISTENER_LOG_FORMATS: Final = ("json", "text")
DEFAULT_LISTENER_ENTRYPOINT: Final = "/ghalistener"
DEFAULT_LISTENER_MIN_RUNNERS: Final = 0
DEFAULT_LISTENER_MAX_RUNNERS: Final = 2147483647
"""MaxInt32: an AutoscalingRunnerSet without ``maxRunners`` is unbounded."""
DEFAULT_RUNNER_GROUP_ID: Final = 1
DEFAULT_RUNNER_GROUP_NAME: Final = "Default"
DEFAULT_MAX_CONCURRENT_RECONCILES_AUTOSCALING_RUNNER_SET: Final = 2
DEFAULT_MAX_CONCURRENT_RECONCILES_AUTOSCALING_LISTENER: Final = 2
DEFAULT_MAX_CONCURRENT_RECONCILES_EPHEMERAL_RUNNER_SET: Final = 2
DEFAULT_MAX_CONCURRENT_RECONCILES_EPHEMERAL_RUNNER: Final = 4
DEFAULT_SCALER_QPS: Final = 50
DEFAULT_SCALER_BURST: Final = 100
DEFAULT_SCALER_WORKERS: Final = 10

# --- Metrics --------------------------------------------------------------

METRICS_SUBSYSTEM: Final = "gha_controller"

# --- Reasons and error sentinels ------------------------------------------

REASON_INVALID_POD_FAILURE: Final = "InvalidPod"
REASON_TOO_MANY_POD_FAILURES_OLDER: Final = "TooManyPodFailures"
"""[OLDER] removed from the newest constants."""
