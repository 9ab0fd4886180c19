"""Reading and validating the listener's config file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from arc_controllers.listener.config import ConfigError, ListenerConfig, read_config, validate_config

VALID: dict[str, Any] = {
    "configure_url": "https://github.com/my-org",
    "vault_type": "",
    "vault_lookup_key": "",
    "github_app_id": "",
    "github_app_installation_id": 0,
    "github_app_private_key": "",
    "github_token": "ghp_secret",
    "ephemeral_runner_set_namespace": "arc-runners",
    "ephemeral_runner_set_name": "set-abcde",
    "max_runners": 2147483647,
    "min_runners": 0,
    "runner_scale_set_id": 7,
    "runner_scale_set_name": "set",
    "server_root_ca": "",
    "log_level": "debug",
    "log_format": "text",
    "metrics_addr": ":8080",
    "metrics_endpoint": "/metrics",
    "metrics": None,
}


def write(tmp_path: Path, content: object) -> Path:
    path = tmp_path / "config.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def base(**changes: Any) -> ListenerConfig:
    values: dict[str, Any] = {
        "configure_url": "github.com/some_org/some_repo",
        "ephemeral_runner_set_namespace": "namespace",
        "ephemeral_runner_set_name": "deployment",
        "runner_scale_set_id": 1,
        "has_credentials": True,
        "github_token": "token",
    }
    values.update(changes)
    return ListenerConfig(**values)


def test_the_controllers_example_file_is_accepted(tmp_path: Path) -> None:
    """The file the controller writes for a PAT decodes field for field."""
    config = read_config(write(tmp_path, VALID))
    assert config.ephemeral_runner_set_name == "set-abcde"
    assert config.max_runners == 2147483647
    assert config.runner_scale_set_id == 7
    assert config.metrics is None
    assert "ghp_secret" not in repr(config)


def test_keys_match_case_insensitively_and_unknown_keys_are_ignored(tmp_path: Path) -> None:
    """Go's decoder matches keys without case and skips keys it does not know."""
    config = read_config(write(tmp_path, {**VALID, "Min_Runners": 1, "something_new": [1]}))
    assert config.min_runners == 1


# Upstream: cmd/ghalistener/config/config_validation_test.go (every test, same order of rules)
@pytest.mark.parametrize(
    ("config", "message"),
    [
        # TestConfigValidationConfigUrl
        (base(configure_url=""), "GitHubConfigUrl is not provided"),
        (base(ephemeral_runner_set_name=""), 'EphemeralRunnerSetNamespace "namespace" or EphemeralRunnerSetName ""'),
        (base(runner_scale_set_id=0), 'RunnerScaleSetId "0" is missing'),
        # TestConfigValidationMinMax
        (base(min_runners=5, max_runners=2), 'MinRunners "5" cannot be greater than MaxRunners "2"'),
        # TestConfigValidationMissingToken
        (base(has_credentials=False, github_token=""), "AppConfig validation failed: missing app config"),
        # TestConfigValidationAppKey/app id integer
        (
            base(github_token="", github_app_id="1", github_app_installation_id=10),
            "AppConfig validation failed: no credentials provided: "
            "either a PAT or GitHub App credentials should be provided",
        ),
        # TestConfigValidationOnlyOneTypeOfCredentials
        (
            base(github_app_id="1", github_app_installation_id=10, github_app_private_key="asdf"),
            "AppConfig validation failed: both PAT and GitHub App credentials provided. should only provide one",
        ),
        # TestConfigValidationWithVaultConfig/invalid vault type
        (base(vault_type="invalid_vault_type", vault_lookup_key="k"), 'unknown vault type: "invalid_vault_type"'),
        # TestConfigValidationWithVaultConfig/vault type set without lookup key
        (base(vault_type="azure_key_vault"), 'VaultLookupKey is required when VaultType is set to "azure_key_vault"'),
        (base(vault_lookup_key="k"), "VaultLookupKey is set but VaultType is empty"),
    ],
)
def test_validation_reports_the_first_broken_rule(config: ListenerConfig, message: str) -> None:
    """Rules run in upstream's order and the first broken one is the error."""
    with pytest.raises(ConfigError, match=None) as info:
        validate_config(config)
    assert message in str(info.value)


# Upstream: TestConfigValidation, TestConfigValidationWithVaultConfig/valid
def test_valid_configs_pass() -> None:
    """A PAT config and a vault config with a lookup key are valid."""
    validate_config(base())
    validate_config(base(has_credentials=False, github_token="", vault_type="azure_key_vault", vault_lookup_key="k"))


def test_order_reports_the_url_before_the_bounds() -> None:
    """With several rules broken, the earliest in upstream's order wins."""
    with pytest.raises(ConfigError, match="GitHubConfigUrl"):
        validate_config(base(configure_url="", min_runners=3, max_runners=1, github_token=""))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "failed to decode config"),
        ("[1, 2]", "must hold a JSON object"),
        ({**VALID, "max_runners": "many"}, "max_runners must be an integer"),
        ({**VALID, "github_token": 5}, "github_token must be a string"),
        ({**VALID, "vault_type": "hashicorp"}, "unsupported vault type: hashicorp"),
        ({**VALID, "configure_url": ""}, "failed to validate configuration: GitHubConfigUrl is not provided"),
    ],
)
def test_bad_files_are_one_readable_line(tmp_path: Path, content: object, message: str) -> None:
    """Every bad file gives one line that says what is wrong, and no credential."""
    with pytest.raises(ConfigError) as info:
        read_config(write(tmp_path, content))
    text = str(info.value)
    assert message in text
    assert "\n" not in text
    assert "ghp_secret" not in text


def test_missing_file_is_reported(tmp_path: Path) -> None:
    """A missing file names the path."""
    with pytest.raises(ConfigError, match="failed to read config"):
        read_config(tmp_path / "absent.json")
