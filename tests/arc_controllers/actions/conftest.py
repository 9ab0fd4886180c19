"""Fixtures for the Actions client tests: a fake service on loopback and clients for it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from arc_controllers.actions import ActionsClient, ProxyConfig, RetryPolicy, SystemInfo, new_client
from arc_controllers.actions.fake import FakeActionsService

FAST_RETRY = RetryPolicy(retry_max=4, wait_min=0.001, wait_max=0.01, timeout=10.0)
"""Upstream's retry budget with waits short enough for tests."""


@pytest.fixture
async def fake() -> AsyncIterator[FakeActionsService]:
    """A fresh fake Actions service with a short long-poll hold."""
    async with FakeActionsService(poll_hold=0.3) as service:
        yield service


@pytest.fixture(params=["pat", "app"])
async def client(request: pytest.FixtureRequest, fake: FakeActionsService) -> AsyncIterator[ActionsClient]:
    """A real client (aiohttp transport) for the fake, once with a PAT and once as a GitHub App."""
    credentials = fake.pat if request.param == "pat" else fake.app
    async with new_client(
        fake.config_url(),
        credentials,
        system_info=SystemInfo(subsystem="test", version="1.2.3"),
        retry=FAST_RETRY,
        proxy=ProxyConfig(),
    ) as actions:
        yield actions
