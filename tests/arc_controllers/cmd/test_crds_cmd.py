"""``arc-controller crds`` and the start-up check of the served CRDs, against a scripted OpenAPI endpoint."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from arc_controllers.api.v1alpha1 import KINDS, EphemeralRunnerSet, crdgen
from arc_controllers.cmd import manager
from arc_controllers.cmd.crds import check_served_crds, install_command
from arc_controllers.cmd.manager import main, run_manager
from arc_controllers.cmd.options import StartupError, parse_manager_options
from reconcilekit.config import RestConfig

CRD_DIR = Path(__file__).resolve().parents[3] / "config" / "crd"
GV = "apis/actions.github.com/v1alpha1"
ENV = {"CONTROLLER_MANAGER_POD_NAMESPACE": "arc-systems", "CONTROLLER_MANAGER_CONTAINER_IMAGE": "img:1"}


def document(*, without: str = "", require: str = "") -> dict[str, Any]:
    """The OpenAPI v3 document an API server publishes for our CRDs, optionally altered on the ERS."""
    schemas = {}
    for kind in KINDS:
        schema = copy.deepcopy(crdgen.generate(kind)["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
        if kind is EphemeralRunnerSet and without:
            del schema["properties"]["spec"]["properties"][without]
        if kind is EphemeralRunnerSet and require:
            schema["properties"]["status"]["properties"][require] = {"type": "integer"}
            schema["properties"]["status"]["required"] = [require]
        gvk = {"group": "actions.github.com", "version": "v1alpha1", "kind": kind.GVK.kind}  # type: ignore[attr-defined]
        schemas[f"com.github.actions.v1alpha1.{gvk['kind']}"] = {**schema, "x-kubernetes-group-version-kind": [gvk]}
    return {"openapi": "3.0.0", "components": {"schemas": schemas}}


class OpenAPIServer:
    def __init__(self) -> None:
        self.document: dict[str, Any] | None = document()
        self.index_status = 200
        self.seen: list[str] = []

    async def index(self, request: web.Request) -> web.Response:
        self.seen.append(request.path_qs)
        paths = {"api/v1": {"serverRelativeURL": "/openapi/v3/api/v1?hash=1"}}
        if self.document is not None:
            paths[GV] = {"serverRelativeURL": f"/openapi/v3/{GV}?hash=ABC"}
        return web.json_response({"paths": paths}, status=self.index_status)

    async def group_version(self, request: web.Request) -> web.Response:
        self.seen.append(request.path_qs)
        return web.json_response(self.document)


@pytest.fixture
async def server() -> AsyncIterator[tuple[OpenAPIServer, RestConfig]]:
    fake = OpenAPIServer()
    app = web.Application()
    app.router.add_get("/openapi/v3", fake.index)
    app.router.add_get(f"/openapi/v3/{GV}", fake.group_version)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield fake, RestConfig(host=f"http://127.0.0.1:{port}", bearer_token="t")
    await runner.cleanup()


def test_crds_prints_our_crds_byte_for_byte(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds"]) == 0
    expected = "".join((CRD_DIR / crdgen.crd_file_name(kind)).read_text() for kind in KINDS)
    assert capsys.readouterr().out == expected


def test_crds_takes_no_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["crds", "--out=x"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_skip_crd_check_is_a_go_bool_flag() -> None:
    assert parse_manager_options(["--auto-scaling-runner-set-only"], ENV).skip_crd_check is False
    assert parse_manager_options(["--auto-scaling-runner-set-only", "--skip-crd-check"], ENV).skip_crd_check is True
    assert parse_manager_options(["--skip-crd-check=false"], ENV).skip_crd_check is False


async def test_our_crds_pass(server: tuple[OpenAPIServer, RestConfig]) -> None:
    fake, config = server
    await check_served_crds(config, image="img:1")
    assert fake.seen == ["/openapi/v3", "/openapi/v3", f"/openapi/v3/{GV}?hash=ABC"]


@pytest.mark.parametrize(
    ("alter", "needle"),
    [
        ({"without": "actionableRevision"}, "EphemeralRunnerSet lacks spec.actionableRevision;"),
        ({"require": "currentReplicas"}, "EphemeralRunnerSet requires status.currentReplicas;"),
    ],
)
async def test_a_gap_is_one_line_with_the_kind_the_fields_and_the_fix_arc_4638(
    server: tuple[OpenAPIServer, RestConfig], alter: dict[str, str], needle: str
) -> None:
    fake, config = server
    fake.document = document(**alter)
    with pytest.raises(StartupError) as caught:
        await check_served_crds(config, image="img:1")
    line = str(caught.value)
    assert caught.value.exit_code == 1
    assert "\n" not in line
    assert needle in line
    assert install_command("img:1") in line
    assert "docker run --rm img:1 crds | kubectl apply --server-side --force-conflicts -f -" in line
    assert "--skip-crd-check" in line


async def test_no_crds_served_and_unreadable_documents_stop_the_start(
    server: tuple[OpenAPIServer, RestConfig],
) -> None:
    fake, config = server
    fake.document = None
    with pytest.raises(StartupError, match=r"serves no actions\.github\.com/v1alpha1 kinds"):
        await check_served_crds(config)
    fake.index_status = 403
    with pytest.raises(StartupError, match=r"cannot read /openapi/v3/apis/actions\.github\.com/v1alpha1: 403"):
        await check_served_crds(config)


async def test_run_manager_checks_before_it_builds_anything(
    server: tuple[OpenAPIServer, RestConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, config = server
    fake.document = document(without="actionableRevision")

    async def load(_: object) -> RestConfig:
        return config

    def no_manager(*_: object, **__: object) -> None:
        raise AssertionError("the manager was built before the CRD check")

    monkeypatch.setattr(manager, "load_rest_config", load)
    monkeypatch.setattr(manager, "build_manager", no_manager)
    options = parse_manager_options(["--auto-scaling-runner-set-only"], ENV)
    with pytest.raises(StartupError, match="CRD check"):
        await run_manager(options)
    skipping = parse_manager_options(["--auto-scaling-runner-set-only", "--skip-crd-check"], ENV)
    with pytest.raises(StartupError, match="unable to start manager: the manager was built"):
        await run_manager(skipping)
