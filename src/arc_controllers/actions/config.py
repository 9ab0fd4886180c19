"""The GitHub config URL: which enterprise, organization or repository, and where its API lives.

``https://github.com/my-org``, ``https://github.com/my-org/repo`` and
``https://github.com/enterprises/my-ent`` name the three scopes. Hosted
GitHub (github.com, www.github.com, github.localhost, ``*.ghe.com``) serves
its API on ``api.<host>``; any other host is GitHub Enterprise Server, with
the API under ``/api/v3``. The variable ``GITHUB_ACTIONS_FORCE_GHES`` (its
presence) forces GHES mode.

Ports: github.com/actions/scaleset config.go
"""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = [
    "FORCE_GHES_ENV",
    "GitHubConfig",
    "GitHubScope",
    "InvalidGitHubConfigURLError",
    "is_hosted_github_host",
    "parse_github_config_url",
]

FORCE_GHES_ENV = "GITHUB_ACTIONS_FORCE_GHES"
"""Environment variable whose presence makes every host GHES."""


class InvalidGitHubConfigURLError(ValueError):
    """The config URL names no enterprise, organization or repository.

    Ports: scaleset.ErrInvalidGitHubConfigURL
    """


class GitHubScope(enum.Enum):
    """What a config URL points at.

    Ports: scaleset gitHubScope
    """

    ENTERPRISE = "enterprise"
    ORGANIZATION = "organization"
    REPOSITORY = "repository"


@dataclass(frozen=True, slots=True, kw_only=True)
class GitHubConfig:
    """A parsed config URL.

    Ports: scaleset gitHubConfig
    """

    config_url: str
    """The URL as given, without leading or trailing slashes."""

    scheme: str
    """``https`` or ``http``."""

    host: str
    """Host with its port, if the URL had one (``127.0.0.1:8080``)."""

    scope: GitHubScope
    """Enterprise, organization or repository."""

    enterprise: str = ""
    """Enterprise slug, for the enterprise scope."""

    organization: str = ""
    """Organization (or user) name, for the organization and repository scopes."""

    repository: str = ""
    """Repository name, for the repository scope."""

    is_hosted: bool = False
    """GitHub.com or GHE.com rather than GitHub Enterprise Server."""

    def github_api_url(self, path: str) -> str:
        """Return the REST API URL for ``path`` (which starts with ``/``).

        Hosted: ``scheme://api.<host><path>`` (``www.github.com`` maps to
        ``api.github.com``); GHES: ``scheme://<host>/api/v3<path>``.

        Ports: gitHubConfig.gitHubAPIURL
        """
        if self.is_hosted:
            host = "api.github.com" if self.host.lower() == "www.github.com" else f"api.{self.host}"
            return f"{self.scheme}://{host}{path}"
        return f"{self.scheme}://{self.host}/api/v3{path}"

    def registration_token_path(self) -> str:
        """Return the REST path that mints a runner registration token for this scope.

        Ports: createRegistrationTokenPath
        """
        if self.scope is GitHubScope.ORGANIZATION:
            return f"/orgs/{self.organization}/actions/runners/registration-token"
        if self.scope is GitHubScope.ENTERPRISE:
            return f"/enterprises/{self.enterprise}/actions/runners/registration-token"
        return f"/repos/{self.organization}/{self.repository}/actions/runners/registration-token"


def is_hosted_github_host(host: str, *, environ: Mapping[str, str] | None = None) -> bool:
    """Tell whether ``host`` is hosted GitHub (not GHES).

    Args:
        host: Host with optional port, compared as Go does: exact names
            case-insensitively, the ``.ghe.com`` suffix case-sensitively.
        environ: Where to look for `FORCE_GHES_ENV`; the process environment
            when ``None``.

    Ports: isHostedGitHubURL
    """
    env = os.environ if environ is None else environ
    if FORCE_GHES_ENV in env:
        return False
    return host.lower() in {"github.com", "www.github.com", "github.localhost"} or host.endswith(".ghe.com")


def parse_github_config_url(url: str, *, environ: Mapping[str, str] | None = None) -> GitHubConfig:
    """Parse a config URL into its scope and names.

    One path segment is an organization; two are an enterprise when the first
    is ``enterprises`` (any case), else owner and repository.

    Args:
        url: The config URL; leading and trailing slashes are ignored.
        environ: Checked for `FORCE_GHES_ENV`; the process environment when ``None``.

    Raises:
        InvalidGitHubConfigURLError: no scheme or host, an empty path, or more
            than two path segments.

    Ports: parseGitHubConfigFromURL
    Differs: a URL without scheme or host is refused here; Go would read its
    whole text as a path.
    """
    trimmed = url.strip("/")
    invalid = InvalidGitHubConfigURLError(
        f"{trimmed!r}: invalid config URL, should point to an enterprise, org, or repository"
    )
    try:
        parts = urlsplit(trimmed)
    except ValueError as err:
        raise invalid from err
    host = parts.netloc.rpartition("@")[2]
    if not parts.scheme or not host:
        raise invalid
    segments = parts.path.strip("/").split("/")
    enterprise = organization = repository = ""
    if len(segments) == 1 and segments[0]:
        scope, organization = GitHubScope.ORGANIZATION, segments[0]
    elif len(segments) == 2 and segments[0].lower() == "enterprises":
        scope, enterprise = GitHubScope.ENTERPRISE, segments[1]
    elif len(segments) == 2:
        scope, organization, repository = GitHubScope.REPOSITORY, segments[0], segments[1]
    else:
        raise invalid
    return GitHubConfig(
        config_url=trimmed,
        scheme=parts.scheme,
        host=host,
        scope=scope,
        enterprise=enterprise,
        organization=organization,
        repository=repository,
        is_hosted=is_hosted_github_host(host, environ=environ),
    )
