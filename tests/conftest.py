"""Unit-test fixtures: no API server here."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest


@pytest.fixture(autouse=True)
async def no_leaked_tasks() -> AsyncIterator[None]:
    """Fail any test that leaves a task running: every task needs an owner that awaits it."""
    before = asyncio.all_tasks()
    yield
    await asyncio.sleep(0)
    current = asyncio.current_task()
    leaked = {t for t in asyncio.all_tasks() - before if not t.done() and t is not current}
    for task in leaked:
        task.cancel()
    assert not leaked, f"tasks left running: {sorted(t.get_name() for t in leaked)}"
