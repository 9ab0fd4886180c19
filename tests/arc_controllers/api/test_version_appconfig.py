"""The version gate and GitHub credentials from the config secret."""

from __future__ import annotations

import pytest

from arc_controllers.api.v1alpha1.appconfig import AppConfig, AppConfigError
from arc_controllers.api.v1alpha1.version import is_version_allowed


# Upstream: apis/actions.github.com/v1alpha1/version_test.go TestIsVersionAllowed
@pytest.mark.parametrize(
    ("resource_version", "build_version", "want"),
    [
        pytest.param("0.11.0", "dev", True, id="dev should always be allowed"),
        pytest.param("dev", "0.11.0", False, id="resourceVersion is not semver"),
        pytest.param("0.11.0", "NA", False, id="buildVersion is not semver"),
        pytest.param("0.11.0", "1.11.0", False, id="major version mismatch"),
        pytest.param("0.11.0", "0.10.0", False, id="minor version mismatch"),
        pytest.param("0.11.1", "0.11.0", True, id="patch version mismatch"),
        pytest.param("abc", "abc", True, id="arbitrary version match"),
        # Python only: edges of the parser
        pytest.param("0.11.0", "canary-1a2b3c", True, id="canary build"),
        pytest.param("1", "1.0.7", True, id="missing minor reads as 0"),
        pytest.param("01.11.0", "1.11.0", False, id="leading zero"),
        pytest.param("v0.11.0", "0.11.0", False, id="v prefix"),
        pytest.param("0.11.0-rc1", "0.11.0", False, id="suffix"),
        pytest.param("0.11.", "0.11.0", False, id="dangling dot"),
        pytest.param("", "0.11.0", False, id="no label"),
    ],
)
def test_is_version_allowed(resource_version: str, build_version: str, want: bool) -> None:
    assert is_version_allowed(resource_version, build_version) is want


def test_token_wins_and_app_fields_are_dropped() -> None:
    config = AppConfig.from_secret_data({"github_token": b"ghp_x", "github_app_id": b"1"})
    assert config == AppConfig(token="ghp_x")
    assert "ghp_x" not in repr(config)


def test_github_app_credentials() -> None:
    config = AppConfig.from_secret_data(
        {"github_app_id": "123", "github_app_installation_id": "456", "github_app_private_key": "-----BEGIN"}
    )
    assert (config.app_id, config.app_installation_id, config.token) == ("123", 456, "")
    assert "BEGIN" not in repr(config)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "no credentials provided"),
        ({"github_app_id": "1", "github_app_installation_id": "2"}, "no credentials provided"),
        (
            {
                "github_token": "t",
                "github_app_id": "1",
                "github_app_installation_id": "2",
                "github_app_private_key": "k",
            },
            "both PAT and GitHub App credentials",
        ),
        ({"github_app_installation_id": "abc"}, "is not an integer"),
    ],
)
def test_bad_secrets(data: dict[str, str], message: str) -> None:
    with pytest.raises(AppConfigError, match=message):
        AppConfig.from_secret_data(data)


def test_from_json_string() -> None:
    assert AppConfig.from_json_string('{"github_token": "t"}') == AppConfig(token="t")
    app = AppConfig.from_json_string(
        '{"github_app_id": "1", "github_app_installation_id": 2, "github_app_private_key": "k"}'
    )
    assert app.has_github_app_auth()
    for bad in ("[]", "{", '{"github_app_installation_id": "2"}', "{}"):
        with pytest.raises(AppConfigError):
            AppConfig.from_json_string(bad)
