"""GitHub credentials read from the config secret: a personal access token or a GitHub App.

Ports: apis/actions.github.com/v1alpha1/appconfig/appconfig.go
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from arc_controllers import constants

__all__ = ["AppConfig", "AppConfigError"]


class AppConfigError(ValueError):
    """The credentials are missing, doubled or malformed (the message never holds a secret value)."""


def _text(value: bytes | str | None) -> str:
    if value is None:
        return ""
    return value.decode("utf-8") if isinstance(value, bytes) else value


@dataclass(frozen=True, slots=True)
class AppConfig:
    """Exactly one kind of GitHub credentials: a token, or app id, installation id and private key.

    Secret values are left out of ``repr`` so the object may be logged.

    Ports: appconfig.AppConfig
    """

    app_id: str = ""
    app_installation_id: int = 0
    app_private_key: str = field(default="", repr=False)
    token: str = field(default="", repr=False)

    def has_github_app_auth(self) -> bool:
        """All three GitHub App fields are set (installation id > 0).

        Ports: AppConfig.hasGitHubAppAuth
        """
        return bool(self.app_id) and self.app_installation_id > 0 and bool(self.app_private_key)

    def validate(self) -> None:
        """Check that exactly one kind of credentials is present.

        Raises:
            AppConfigError: both a token and GitHub App credentials, or neither.

        Ports: AppConfig.Validate
        """
        has_token = bool(self.token)
        has_app = self.has_github_app_auth()
        if has_token and has_app:
            raise AppConfigError("both PAT and GitHub App credentials provided. should only provide one")
        if not has_token and not has_app:
            raise AppConfigError("no credentials provided: either a PAT or GitHub App credentials should be provided")

    def tidy(self) -> AppConfig:
        """Keep only the token when there is one, else only the app fields.

        Ports: AppConfig.tidy
        """
        if self.token:
            return AppConfig(token=self.token)
        return AppConfig(
            app_id=self.app_id, app_installation_id=self.app_installation_id, app_private_key=self.app_private_key
        )

    @classmethod
    def from_secret_data(cls, data: Mapping[str, bytes | str]) -> AppConfig:
        """Credentials from a Secret's decoded data (keys ``github_token`` or the three ``github_app_*``).

        Args:
            data: Key -> value, already base64-decoded (bytes or str).

        Raises:
            AppConfigError: the installation id is not a decimal int64, or `validate` fails.

        Ports: appconfig.FromSecret
        """
        raw_id = _text(data.get(constants.GITHUB_SECRET_KEY_APP_INSTALLATION_ID))
        installation_id = 0
        if raw_id:
            try:
                installation_id = int(raw_id, 10)
            except ValueError:
                raise AppConfigError(f"{constants.GITHUB_SECRET_KEY_APP_INSTALLATION_ID} is not an integer") from None
        config = cls(
            app_id=_text(data.get(constants.GITHUB_SECRET_KEY_APP_ID)),
            app_installation_id=installation_id,
            app_private_key=_text(data.get(constants.GITHUB_SECRET_KEY_APP_PRIVATE_KEY)),
            token=_text(data.get(constants.GITHUB_SECRET_KEY_TOKEN)),
        )
        try:
            config.validate()
        except AppConfigError as exc:
            raise AppConfigError(f"failed to validate config: {exc}") from None
        return config.tidy()

    @classmethod
    def from_json_string(cls, text: str) -> AppConfig:
        """Credentials from JSON such as a vault entry holds (same keys as the secret).

        Raises:
            AppConfigError: not a JSON object, wrong field types, or `validate` fails.

        Ports: appconfig.FromJSONString
        """
        try:
            raw: Any = json.loads(text)
        except ValueError:
            raise AppConfigError("app config is not valid JSON") from None
        if not isinstance(raw, dict):
            raise AppConfigError("app config is not a JSON object")
        installation_id = raw.get(constants.GITHUB_SECRET_KEY_APP_INSTALLATION_ID, 0)
        strings = [raw.get(k, "") for k in ("github_app_id", "github_app_private_key", "github_token")]
        if isinstance(installation_id, bool) or not isinstance(installation_id, int):
            raise AppConfigError(f"{constants.GITHUB_SECRET_KEY_APP_INSTALLATION_ID} must be an integer")
        if not all(isinstance(s, str) for s in strings):
            raise AppConfigError("github_app_id, github_app_private_key and github_token must be strings")
        app_id, private_key, token = strings
        config = cls(app_id=app_id, app_installation_id=installation_id, app_private_key=private_key, token=token)
        try:
            config.validate()
        except AppConfigError as exc:
            raise AppConfigError(f"failed to validate app config decoded from string: {exc}") from None
        return config.tidy()
