"""The OpenAPI v3 client against a scripted endpoint: the index, one document, the hash query kept."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from reconcilekit.client.openapi import new_openapi_v3_client
from reconcilekit.config import RestConfig
from reconcilekit.errors import NotFoundError


@pytest.fixture
async def config() -> AsyncIterator[tuple[RestConfig, list[str]]]:
    seen: list[str] = []

    async def index(request: web.Request) -> web.Response:
        seen.append(request.path_qs)
        assert request.headers["Authorization"] == "Bearer t"
        return web.json_response(
            {"paths": {"apis/apps/v1": {"serverRelativeURL": "/openapi/v3/apis/apps/v1?hash=AB12"}, "odd": {}}}
        )

    async def apps(request: web.Request) -> web.Response:
        seen.append(request.path_qs)
        return web.json_response({"components": {"schemas": {"io.k8s.api.apps.v1.Deployment": {"type": "object"}}}})

    app = web.Application()
    app.router.add_get("/openapi/v3", index)
    app.router.add_get("/openapi/v3/apis/apps/v1", apps)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield RestConfig(host=f"http://127.0.0.1:{runner.addresses[0][1]}", bearer_token="t"), seen
    await runner.cleanup()


async def test_paths_and_one_group_versions_document(config: tuple[RestConfig, list[str]]) -> None:
    rest, seen = config
    async with new_openapi_v3_client(rest) as openapi:
        assert await openapi.paths() == {"apis/apps/v1": "/openapi/v3/apis/apps/v1?hash=AB12"}
        doc = await openapi.schema("/apis/apps/v1")
        assert list(doc["components"]["schemas"]) == ["io.k8s.api.apps.v1.Deployment"]
        with pytest.raises(NotFoundError, match=r"no OpenAPI v3 document for apis/example\.com/v1"):
            await openapi.schema("apis/example.com/v1")
    assert seen == ["/openapi/v3", "/openapi/v3", "/openapi/v3/apis/apps/v1?hash=AB12", "/openapi/v3"]
