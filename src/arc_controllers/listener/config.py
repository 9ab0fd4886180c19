"""The listener's configuration file: read it, check it in upstream's order.

The controller writes the file (a Secret key ``config.json`` mounted at
``/etc/gha-listener``) and names it in ``LISTENER_CONFIG_PATH``. Keys are
snake_case and matched case-insensitively, unknown keys are ignored, as Go's
JSON decoder does. Every problem is one `ConfigError` whose text is a single
readable line without any credential in it.

Ports: cmd/ghalistener/config/config.go (Read, Validate) and
apis/actions.github.com/v1alpha1/appconfig/appconfig.go (AppConfig.Validate)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "AZURE_KEY_VAULT",
    "ConfigError",
    "ListenerConfig",
    "read_config",
    "validate_config",
]

AZURE_KEY_VAULT = "azure_key_vault"
"""The only vault type upstream knows."""

_STRING_KEYS = (
    "configure_url",
    "vault_type",
    "vault_lookup_key",
    "github_app_id",
    "github_app_private_key",
    "github_token",
    "ephemeral_runner_set_namespace",
    "ephemeral_runner_set_name",
    "runner_scale_set_name",
    "server_root_ca",
    "log_level",
    "log_format",
    "metrics_addr",
    "metrics_endpoint",
)
_INT_KEYS = ("github_app_installation_id", "max_runners", "min_runners", "runner_scale_set_id")
_CREDENTIAL_KEYS = ("github_app_id", "github_app_installation_id", "github_app_private_key", "github_token")
_OBJECT_KEYS = ("metrics", "azure_key_vault", "scaler")


class ConfigError(Exception):
    """The configuration file cannot be read, decoded or accepted.

    The message is one line, starts lowercase and never holds a credential.

    Python only: Go returns wrapped ``error`` values; the entry point turns this
    into one line on stderr and exit status 1.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerConfig:
    """Everything the listener process is told by its controller.

    Ports: config.Config (cmd/ghalistener/config)
    """

    configure_url: str = ""
    """GitHub config URL: ``https://host/<org>``, ``https://host/<owner>/<repo>`` or ``https://host/enterprises/<ent>``."""

    vault_type: str = ""
    """``""`` for inline credentials, or ``"azure_key_vault"``."""

    vault_lookup_key: str = ""
    """Name of the vault secret holding the credential JSON."""

    azure_key_vault: Mapping[str, Any] | None = None
    """Raw ``azure_key_vault`` block: tenant_id, client_id, url, certificate_path, proxy."""

    has_credentials: bool = False
    """Whether any of the four credential keys was present (Go's embedded pointer is then non-nil)."""

    github_app_id: str = ""
    """GitHub App ID or client ID."""

    github_app_installation_id: int = 0
    """GitHub App installation ID."""

    github_app_private_key: str = field(default="", repr=False)
    """GitHub App private key, PEM. Never logged."""

    github_token: str = field(default="", repr=False)
    """Personal access token. Never logged."""

    ephemeral_runner_set_namespace: str = ""
    """Namespace of the EphemeralRunnerSet, and of its EphemeralRunners."""

    ephemeral_runner_set_name: str = ""
    """Name of the EphemeralRunnerSet the listener patches."""

    max_runners: int = 0
    """Upper bound of the desired count; the controller writes 2147483647 when unbounded."""

    min_runners: int = 0
    """Runners kept even without jobs; added to the assigned jobs."""

    runner_scale_set_id: int = 0
    """The scale set's ID on the Actions service."""

    runner_scale_set_name: str = ""
    """Informational: the AutoscalingRunnerSet's name."""

    server_root_ca: str = field(default="", repr=False)
    """PEM bundle added to the system roots; ``""`` for system roots only."""

    log_level: str = ""
    """``debug``, ``info``, ``warn`` or ``error`` (any case)."""

    log_format: str = ""
    """``json`` or ``text``."""

    metrics_addr: str = ""
    """``host:port`` (``:8080`` for all interfaces); ``""`` runs no metrics server."""

    metrics_endpoint: str = ""
    """HTTP path of the metrics; ``/metrics`` when empty."""

    metrics: Mapping[str, Any] | None = None
    """The ``metrics`` block (counters, gauges, histograms); ``None`` means upstream's defaults."""

    scaler: Mapping[str, Any] | None = None
    """The ``scaler`` block (``qps``, ``burst``); ``None`` means the defaults 50 and 100."""


def read_config(path: str | Path) -> ListenerConfig:
    """Read, decode and validate the configuration file at ``path``.

    Blocking file I/O: call it at start-up, before the event loop runs.

    Raises:
        ConfigError: the file is missing or unreadable, is not a JSON object,
            has a value of the wrong type, or fails `validate_config`.

    Ports: config.Read
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"failed to read config {path}: {err.strerror or err}") from err
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"failed to decode config: {err}") from err
    config = _decode(raw)
    if config.vault_type == "":
        try:
            validate_config(config)
        except ConfigError as err:
            raise ConfigError(f"failed to validate configuration: {err}") from err
        return config
    if config.vault_type == AZURE_KEY_VAULT:
        # Differs: the port has no Azure Key Vault client; a vault-backed config
        # is rejected here with one line rather than half supported.
        raise ConfigError("failed to create Azure Key Vault client: azure_key_vault is not supported by this port")
    raise ConfigError(f"unsupported vault type: {config.vault_type}")


def validate_config(config: ListenerConfig) -> None:
    """Check ``config`` in upstream's order; the first failing rule is reported.

    Order: config URL; runner-set namespace and name; scale set ID; min ≤ max;
    vault type and lookup key; then exactly one credential (PAT or GitHub App).

    Raises:
        ConfigError: the first rule ``config`` breaks.

    Ports: Config.Validate
    """
    if not config.configure_url:
        raise ConfigError("GitHubConfigUrl is not provided")
    if not config.ephemeral_runner_set_namespace or not config.ephemeral_runner_set_name:
        raise ConfigError(
            f"EphemeralRunnerSetNamespace {json.dumps(config.ephemeral_runner_set_namespace)} "
            f"or EphemeralRunnerSetName {json.dumps(config.ephemeral_runner_set_name)} is missing"
        )
    if config.runner_scale_set_id == 0:
        raise ConfigError(f'RunnerScaleSetId "{config.runner_scale_set_id}" is missing')
    if config.max_runners < config.min_runners:
        raise ConfigError(
            f'MinRunners "{config.min_runners}" cannot be greater than MaxRunners "{config.max_runners}"'
        )
    if config.vault_type:
        if config.vault_type != AZURE_KEY_VAULT:
            raise ConfigError(f"VaultType validation failed: unknown vault type: {json.dumps(config.vault_type)}")
        if not config.vault_lookup_key:
            raise ConfigError(f"VaultLookupKey is required when VaultType is set to {json.dumps(config.vault_type)}")
    elif config.vault_lookup_key:
        # Differs: Go skips credential checks here and crashes later on a nil
        # credential block; the spec asks the port to reject the file instead.
        raise ConfigError("VaultLookupKey is set but VaultType is empty")
    else:
        _validate_credentials(config)


def _validate_credentials(config: ListenerConfig) -> None:
    """Exactly one of a PAT or a complete GitHub App credential.

    Ports: AppConfig.Validate
    """
    if not config.has_credentials:
        raise ConfigError("AppConfig validation failed: missing app config")
    has_token = bool(config.github_token)
    has_app = (
        bool(config.github_app_id) and config.github_app_installation_id > 0 and bool(config.github_app_private_key)
    )
    if has_token and has_app:
        raise ConfigError(
            "AppConfig validation failed: both PAT and GitHub App credentials provided. should only provide one"
        )
    if not has_token and not has_app:
        raise ConfigError(
            "AppConfig validation failed: no credentials provided: "
            "either a PAT or GitHub App credentials should be provided"
        )


def _decode(raw: object) -> ListenerConfig:
    """Turn the decoded JSON into a `ListenerConfig`, checking each value's type.

    Keys match case-insensitively; the last spelling wins, as in Go. ``null``
    leaves a field at its zero value.

    Python only: Go's decoder does this through struct tags.
    """
    if not isinstance(raw, dict):
        raise ConfigError("failed to decode config: the file must hold a JSON object")
    by_key: dict[str, Any] = {str(k).lower(): v for k, v in raw.items()}
    values: dict[str, Any] = {}
    for key in _STRING_KEYS:
        value = by_key.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ConfigError(f"failed to decode config: {key} must be a string, got {type(value).__name__}")
        values[key] = value
    for key in _INT_KEYS:
        value = by_key.get(key)
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise ConfigError(f"failed to decode config: {key} must be an integer, got {type(value).__name__}")
        values[key] = value
    for key in _OBJECT_KEYS:
        value = by_key.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ConfigError(f"failed to decode config: {key} must be an object, got {type(value).__name__}")
        values[key] = value
    values["has_credentials"] = any(key in by_key for key in _CREDENTIAL_KEYS)
    return ListenerConfig(**values)
