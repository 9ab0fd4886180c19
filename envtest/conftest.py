"""Integration tests: a real kube-apiserver and etcd (see reconcilekit.envtest).

Fixtures here:
    rest_config: the admin REST config of the session's control plane (loaded once).
    client: a fresh `RestClient` per test (its own request counts), closed after it.
    counter_crd: installs envtest/testdata/counters-crd.yaml (a kind with a status subresource).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest_asyncio

from reconcilekit.client import RestClient, new_client
from reconcilekit.config import RestConfig, load_rest_config

TESTDATA = Path(__file__).parent / "testdata"


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def rest_config(envtest_environment: Any) -> RestConfig:
    """The control plane's admin REST config, from its kubeconfig."""
    return await load_rest_config(envtest_environment.kubeconfig_path)


@pytest_asyncio.fixture(loop_scope="session")
async def client(rest_config: RestConfig) -> AsyncIterator[RestClient]:
    """A raw-JSON client with field owner ``reconcilekit-tests``."""
    async with new_client(rest_config, field_owner="reconcilekit-tests", timeout=30.0) as c:
        yield c


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def counter_crd(envtest_environment: Any) -> None:
    """The Counter CRD (testing.reconcilekit.io/v1), installed once and served."""
    await envtest_environment.install_crds([TESTDATA / "counters-crd.yaml"])
