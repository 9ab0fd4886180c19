"""The fake's command line and its credentials endpoint: plain-text help, the organization honoured."""

from __future__ import annotations

import aiohttp
import pytest

from arc_controllers.actions.fake import FakeActionsService
from arc_controllers.actions.fake.__main__ import main


def test_help_is_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: arc-fake-actions")
    assert "--organization" in out
    assert "/_fake/credentials" in out
    assert "`" not in out  # no reStructuredText from a docstring


async def test_credentials_carry_the_organization_the_service_was_started_with() -> None:
    async with (
        FakeActionsService(organization="acme") as fake,
        aiohttp.ClientSession(base_url=fake.url) as http,
        http.get("/_fake/credentials") as answer,
    ):
        creds = await answer.json()
    assert creds["configUrl"] == fake.config_url() == f"{fake.url}/acme"
