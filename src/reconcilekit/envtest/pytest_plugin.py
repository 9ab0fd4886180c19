"""pytest fixtures: a session-scoped control plane and a fresh namespace per test.

Loaded in every pytest run of the venv (a ``pytest11`` entry point), so
importing it starts nothing and imports nothing heavy; the control plane
starts the first time a test asks for `envtest_environment`.

Fixtures:
    envtest_environment: the session's started `Environment` (stopped at session end).
    namespace: the name of a fresh ``test-<random>`` Namespace, deleted (best-effort) after the test.

CRDs to install at start come from the ini option ``envtest_crd_paths``
(paths relative to the ini file) and from ``ENVTEST_CRD_PATHS`` (separated by
``os.pathsep``). Tests marked ``envtest_only`` are skipped when
``USE_EXISTING_CLUSTER=true``.

Python only: the pytest face of `reconcilekit.envtest` (upstream uses Ginkgo's
BeforeSuite/AfterSuite).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from reconcilekit.envtest._binaries import locate_binary
from reconcilekit.envtest._settings import use_existing_cluster_from_env

if TYPE_CHECKING:
    from reconcilekit.envtest._environment import Environment

__all__ = ["envtest_environment", "namespace"]

_ENVTEST_ONLY = (
    "envtest_only: needs the bare control plane started by reconcilekit.envtest "
    "(skipped with USE_EXISTING_CLUSTER=true)"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ``envtest_crd_paths`` ini option.

    Python only
    """
    parser.addini(
        "envtest_crd_paths",
        type="paths",
        default=[],
        help="CRD files or folders the envtest_environment fixture installs at start",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``envtest_only`` marker (for projects that do not declare it).

    Python only
    """
    config.addinivalue_line("markers", _ENVTEST_ONLY)


def pytest_report_header(config: pytest.Config) -> str:
    """Say in the header whether tests use envtest's binaries (and which) or an existing cluster.

    Python only
    """
    if use_existing_cluster_from_env():
        return "envtest: USE_EXISTING_CLUSTER=true, using the current kubeconfig's cluster"
    found = locate_binary("kube-apiserver")
    return f"envtest: kube-apiserver from {found.path.parent} ({found.source}), started on first use"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``envtest_only`` tests when ``USE_EXISTING_CLUSTER=true``.

    Python only
    """
    if not use_existing_cluster_from_env():
        return
    skip = pytest.mark.skip(reason="envtest_only test, and USE_EXISTING_CLUSTER=true")
    for item in items:
        if item.get_closest_marker("envtest_only") is not None:
            item.add_marker(skip)


def _crd_paths(config: pytest.Config) -> list[Path]:
    paths = [Path(p) for p in config.getini("envtest_crd_paths")]
    paths += [Path(p) for p in os.environ.get("ENVTEST_CRD_PATHS", "").split(os.pathsep) if p]
    return paths


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def envtest_environment(request: pytest.FixtureRequest) -> AsyncIterator[Environment]:
    """The session's control plane (or existing cluster), started on first use and stopped at session end.

    Raises:
        BinaryNotFoundError: the binaries are not built (never a skip).

    Ports: the BeforeSuite/AfterSuite pair of a controller-runtime suite_test.go
    """
    from reconcilekit.envtest._environment import Environment

    async with Environment(crd_paths=_crd_paths(request.config)) as env:
        yield env


@pytest_asyncio.fixture(loop_scope="session")
async def namespace(envtest_environment: Environment) -> AsyncIterator[str]:
    """The name of a Namespace created for this test; deleted after it, ignoring errors.

    Python only
    """
    name = await envtest_environment.create_namespace()
    try:
        yield name
    finally:
        with contextlib.suppress(Exception):
            await envtest_environment.delete_namespace(name)
