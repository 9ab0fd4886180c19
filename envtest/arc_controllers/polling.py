"""Gomega-style polling for the ARC envtests: done once the check returns neither None nor False.

Both are built on `reconcilekit.testing.eventually`, so a check that raises while the cache
or the controllers catch up (a ``NotFoundError`` for an object not created yet, a
``KeyError`` for a status not written yet) is "not yet", and a timeout names the last
value or error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from reconcilekit.testing import eventually as _eventually

__all__ = ["consistently", "eventually"]


async def eventually(check: Callable[[], Awaitable[Any]], *, within: float = 20.0, interval: float = 0.25) -> Any:
    """Gomega's Eventually: poll until ``check()`` returns neither None nor False; errors are retried."""

    async def settled() -> tuple[Any]:
        value = await check()
        assert value is not None, "last value None"
        assert value is not False, "last value False"
        return (value,)

    (value,) = await _eventually(settled, timeout=within, interval=interval)
    return value


async def consistently(check: Callable[[], Awaitable[Any]], *, duration: float = 2.0, interval: float = 0.25) -> None:
    """Gomega's Consistently: ``check`` returns neither None nor False (nor raises) for ``duration`` seconds."""
    deadline = asyncio.get_running_loop().time() + duration
    while asyncio.get_running_loop().time() < deadline:
        value = await check()
        assert value is not None, "stopped holding: None"
        assert value is not False, "stopped holding: False"
        await asyncio.sleep(interval)
