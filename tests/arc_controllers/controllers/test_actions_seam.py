"""SecretActionsClientFactory: one build per key under concurrency, every built client closed; error kinds by class."""

from __future__ import annotations

import asyncio
import base64
from typing import Any

import pytest

from arc_controllers.actions.errors import (
    ActionsError,
    ActionsNotFoundError,
    JobStillRunningError,
    RunnerExistsError,
    RunnerNotFoundError,
)
from arc_controllers.controllers.actions_seam import (
    SecretActionsClientFactory,
    is_actions_not_found,
    is_job_still_running,
    is_runner_exists,
    is_runner_not_found,
)
from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey


def _b64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


class SecretReader:
    """Serves one Secret; every read yields to the loop so concurrent callers interleave."""

    def __init__(self, token: str = "tok-1") -> None:
        self.token = token
        self.reads = 0

    async def get(self, gvk: GroupVersionKind, key: ObjectKey, /) -> dict[str, Any]:
        self.reads += 1
        await asyncio.sleep(0.01)
        return {"metadata": {"name": key.name, "namespace": key.namespace}, "data": {"github_token": _b64(self.token)}}


class FakeActionsClient:
    def __init__(self, url: str, *, proxy: Any = None, root_ca: str = "") -> None:
        self.url = url
        self.proxy = proxy
        self.root_ca = root_ca
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


class Builder:
    def __init__(self) -> None:
        self.built: list[FakeActionsClient] = []

    def __call__(
        self, url: str, credentials: Any, *, system_info: Any, proxy: Any = None, root_ca: str = ""
    ) -> FakeActionsClient:
        client = FakeActionsClient(url, proxy=proxy, root_ca=root_ca)
        self.built.append(client)
        return client


def runner(namespace: str = "ns", secret: str = "gh") -> dict[str, Any]:
    return {
        "kind": "EphemeralRunner",
        "metadata": {"name": "r", "namespace": namespace},
        "spec": {"githubConfigUrl": "https://github.com/org", "githubConfigSecret": secret},
    }


async def test_concurrent_calls_on_a_cold_cache_build_one_client_and_read_the_secret_once() -> None:
    reader, builder = SecretReader(), Builder()
    factory = SecretActionsClientFactory(reader, build_client=builder)
    got = await asyncio.gather(*(factory(runner()) for _ in range(4)))
    assert reader.reads == 1
    assert len(builder.built) == 1
    assert len({id(c) for c in got}) == 1
    await factory.aclose()
    assert all(c.closed for c in builder.built)


async def test_distinct_keys_get_distinct_clients() -> None:
    reader, builder = SecretReader(), Builder()
    factory = SecretActionsClientFactory(reader, build_client=builder)
    await asyncio.gather(factory(runner("a")), factory(runner("b")), factory(runner("a")), factory(runner("b")))
    assert len(builder.built) == 2
    await factory.aclose()
    assert all(c.closed for c in builder.built)


async def test_expiry_keeps_the_client_if_the_secret_is_unchanged_and_retires_it_otherwise() -> None:
    reader, builder = SecretReader(), Builder()
    factory = SecretActionsClientFactory(reader, ttl=0.0, build_client=builder)
    first = await factory(runner())
    assert await factory(runner()) is first  # expired, re-read, same credentials: same client
    assert reader.reads == 2
    assert len(builder.built) == 1
    reader.token = "tok-2"  # rotated
    second = await factory(runner())
    assert second is not first
    assert len(builder.built) == 2
    assert not builder.built[0].closed  # other tasks may still be mid-request on it
    await factory.aclose()
    assert [c.closed for c in builder.built] == [True, True]


class RunnerNotFoundLookalike(Exception):
    """Shares the Actions client's class name, not its class."""


RunnerNotFoundLookalike.__name__ = "RunnerNotFoundError"


@pytest.mark.parametrize(
    ("err", "expected"),
    [
        (RunnerNotFoundError("gone"), (True, False, False, False)),
        (ActionsNotFoundError("404"), (True, True, False, False)),
        (JobStillRunningError("busy"), (False, False, True, False)),
        (RunnerExistsError("taken"), (False, False, False, True)),
        (ActionsError("500"), (False, False, False, False)),
        (RunnerNotFoundLookalike("gone"), (False, False, False, False)),
    ],
)
def test_error_kinds_are_recognised_by_class_not_by_name(err: BaseException, expected: tuple[bool, ...]) -> None:
    """Each predicate matches the Actions client's error classes; a class that only shares a name does not."""
    kinds = (is_runner_not_found(err), is_actions_not_found(err), is_job_still_running(err), is_runner_exists(err))
    assert kinds == expected
