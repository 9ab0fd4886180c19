"""Config URL parsing: scopes, hosted vs GHES, the REST API base and the registration-token path."""

from __future__ import annotations

import pytest

from arc_controllers.actions import GitHubScope, InvalidGitHubConfigURLError, parse_github_config_url

ORG, REPO, ENT = GitHubScope.ORGANIZATION, GitHubScope.REPOSITORY, GitHubScope.ENTERPRISE


# Upstream: config_test.go TestGitHubConfig/"when given a valid URL"
@pytest.mark.parametrize(
    ("url", "scope", "enterprise", "organization", "repository", "hosted"),
    [
        ("https://github.com/org/repo", REPO, "", "org", "repo", True),
        ("https://github.com/org/repo/", REPO, "", "org", "repo", True),
        ("https://github.com/org", ORG, "", "org", "", True),
        ("https://github.com/enterprises/my-enterprise", ENT, "my-enterprise", "", "", True),
        ("https://github.com/enterprises/my-enterprise/", ENT, "my-enterprise", "", "", True),
        ("https://github.com/Enterprises/my-enterprise", ENT, "my-enterprise", "", "", True),
        ("https://www.github.com/org", ORG, "", "org", "", True),
        ("https://www.github.com/org/", ORG, "", "org", "", True),
        ("https://github.localhost/org", ORG, "", "org", "", True),
        ("https://my-ghes.com/org", ORG, "", "org", "", False),
        ("https://my-ghes.com/org/", ORG, "", "org", "", False),
        ("https://my-ghes.ghe.com/org/", ORG, "", "org", "", True),
        ("http://127.0.0.1:8080/my-org/repo", REPO, "", "my-org", "repo", False),
    ],
)
def test_config_url_scopes(
    url: str, scope: GitHubScope, enterprise: str, organization: str, repository: str, hosted: bool
) -> None:
    """Each config URL parses to its scope, names and hosted flag."""
    config = parse_github_config_url(url, environ={})
    assert (config.scope, config.enterprise, config.organization, config.repository, config.is_hosted) == (
        scope,
        enterprise,
        organization,
        repository,
        hosted,
    )
    assert config.config_url == url.strip("/")


# Upstream: config_test.go TestGitHubConfig/"when given an invalid URL"
@pytest.mark.parametrize(
    "url",
    ["https://github.com/", "https://github.com", "https://github.com/some/random/path", "", "github.com/org"],
)
def test_invalid_config_urls_are_refused(url: str) -> None:
    """No path, too deep a path, or no scheme and host: InvalidGitHubConfigURLError."""
    with pytest.raises(InvalidGitHubConfigURLError, match="should point to an enterprise, org, or repository"):
        parse_github_config_url(url, environ={})


# Upstream: config_test.go TestGitHubConfig_GitHubAPIURL
@pytest.mark.parametrize(
    ("url", "environ", "api"),
    [
        ("https://github.com/org/repo", {}, "https://api.github.com/some/path"),
        ("https://www.github.com/org", {}, "https://api.github.com/some/path"),
        ("https://github.ghe.com/org/repo", {}, "https://api.github.ghe.com/some/path"),
        ("https://ghes.com/org/repo", {}, "https://ghes.com/api/v3/some/path"),
        ("https://test.ghe.com/org/repo", {"GITHUB_ACTIONS_FORCE_GHES": "1"}, "https://test.ghe.com/api/v3/some/path"),
        ("https://github.com/org", {"GITHUB_ACTIONS_FORCE_GHES": ""}, "https://github.com/api/v3/some/path"),
        ("http://127.0.0.1:9999/org", {}, "http://127.0.0.1:9999/api/v3/some/path"),
    ],
)
def test_github_api_url(url: str, environ: dict[str, str], api: str) -> None:
    """Hosted GitHub uses api.<host>; GHES (or GITHUB_ACTIONS_FORCE_GHES, even empty) uses /api/v3."""
    assert parse_github_config_url(url, environ=environ).github_api_url("/some/path") == api


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("https://github.com/org", "/orgs/org/actions/runners/registration-token"),
        ("https://github.com/org/repo", "/repos/org/repo/actions/runners/registration-token"),
        ("https://github.com/enterprises/ent", "/enterprises/ent/actions/runners/registration-token"),
    ],
)
def test_registration_token_path_per_scope(url: str, path: str) -> None:
    """Each scope has its own registration-token endpoint."""
    assert parse_github_config_url(url, environ={}).registration_token_path() == path
