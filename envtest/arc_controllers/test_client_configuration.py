"""The Actions client's optional configuration (proxy, root CAs) on a real API server.

Upstream: the "client optional configuration", proxy and root-CA specs of
autoscalingrunnerset_controller_test.go, ephemeralrunnerset_controller_test.go and
ephemeralrunner_controller_test.go. Upstream points the objects at ``example.com`` and
lets an ``httptest`` proxy answer 200 to everything; here the parts are real:

* Proxy: `forward_proxy.ForwardProxy` relays to the fake Actions service and records each
  request's ``Proxy-Authorization``. The config URL names the service ``actions.test``
  (RFC 2606), a name only the proxy can resolve, because the client never proxies
  loopback hosts (a rule of Go's ``httpproxy`` the port keeps). The GitHub-side calls
  (registration token, tenant lookup) go through the proxy; the tenant URL the fake
  returns is on ``127.0.0.1`` and is reached directly, as the product rule says.
* Root CAs: a second fake service serves HTTPS with a certificate from a fresh CA
  (`forward_proxy.make_tls`); the CA's PEM sits in a ConfigMap that ``githubServerTLS``
  names. Without that CA the client's TLS handshake fails (the mutation check in the
  branch report drops it).
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from typing import Any

import pytest_asyncio

from arc_controllers.actions.fake import FakeActionsService

from .conftest import ER, ERS, POD, Harness, eventually
from .forward_proxy import ForwardProxy, ProxiedRequest, make_tls
from .scaleset_world import ARS, World, world

__all__ = ["world"]

HOST = "actions.test"
CA_KEY = "rootCA.crt"
CA_CONFIG_MAP = "root-ca-configmap"
TLS = {"certificateFrom": {"configMapKeyRef": {"name": CA_CONFIG_MAP, "key": CA_KEY}}}


@pytest_asyncio.fixture(loop_scope="session", scope="module")
async def tls_service() -> AsyncIterator[tuple[FakeActionsService, str]]:
    """A fake Actions service on HTTPS, and the PEM of the CA that signed its certificate."""
    material = await asyncio.to_thread(make_tls)
    async with FakeActionsService(ssl_context=material.server_context) as svc:
        yield svc, material.ca_pem


@pytest_asyncio.fixture(loop_scope="session")
async def proxy() -> AsyncIterator[ForwardProxy]:
    async with ForwardProxy(hosts={HOST: "127.0.0.1"}) as p:
        yield p


def via_proxy(service: FakeActionsService) -> str:
    """The service's config URL under the host name only the proxy resolves."""
    return service.config_url().replace("127.0.0.1", HOST, 1)


def relayed(proxy: ForwardProxy) -> list[ProxiedRequest]:
    return [r for r in proxy.seen if r.url.startswith(f"http://{HOST}:")]


async def create_secret(client: Any, namespace: str, name: str, **data: str) -> None:
    await client.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
        }
    )


async def create_ca_config_map(client: Any, namespace: str, pem: str) -> None:
    await client.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": CA_CONFIG_MAP, "namespace": namespace},
            "data": {CA_KEY: pem},
        }
    )


async def scale_set_id_of(w: World) -> int | None:
    annotations = (await w.get(ARS, w.name))["metadata"].get("annotations") or {}
    raw = annotations.get("runner-scale-set-id")
    return int(raw) if raw else None


def runner(h: Harness, *, config_url: str, scale_set_id: int, secret: str = "github-config", **spec: Any) -> dict:
    """An EphemeralRunner like upstream's newExampleRunner, against ``config_url``."""
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {"name": h.namespace, "namespace": h.namespace},
        "spec": {
            "githubConfigUrl": config_url,
            "githubConfigSecret": secret,
            "runnerScaleSetId": scale_set_id,
            "spec": {"containers": [{"name": "runner", "image": "ghcr.io/actions/actions-runner:latest"}]},
            **spec,
        },
    }


async def runner_id(h: Harness) -> int | None:
    """The runner's registered id, or None before it has one."""
    status = (await h.get(ER, h.namespace)).get("status") or {}
    return int(status.get("runnerId") or 0) or None


async def one_runner(h: Harness) -> dict[str, Any] | None:
    runners = await h.runners()
    return runners[0] if len(runners) == 1 else None


async def scale_down_a_registered_runner(h: Harness, runner_id_value: int) -> None:
    """Upstream's steps: the set's one runner reports Running with an id, then the set goes to 0 replicas.

    The set then removes the runner from the Actions service (RemoveRunner), with its own client.
    """
    found = await eventually(lambda: one_runner(h))
    await h.patch_status(ER, found["metadata"]["name"], {"phase": "Running", "runnerId": runner_id_value})
    await h.patch_spec(ERS, "set", {"replicas": 0})


# ---- AutoscalingRunnerSet ------------------------------------------------------------------


# Upstream: Describe "Test client optional configuration" / Context "When specifying a proxy"
#   It "should be able to make requests to a server using a proxy"
async def test_ars_reaches_the_service_through_the_proxy(world: World, proxy: ForwardProxy) -> None:
    """The scale set is registered, and every GitHub-side call went through the proxy, without credentials."""
    w = world
    await w.start()
    await w.client.create(w.ars(githubConfigUrl=via_proxy(w.service), proxy={"http": {"url": proxy.url}}))

    scale_set_id = await eventually(lambda: scale_set_id_of(w))
    assert w.service.state.scale_set(scale_set_id).name == w.name
    seen = relayed(proxy)
    assert any(r.url.endswith("/actions/runners/registration-token") for r in seen)
    assert {r.proxy_authorization for r in seen} == {""}


# Upstream: Context "When specifying a proxy"
#   It "should be able to make requests to a server using a proxy with user info"
async def test_ars_proxy_credentials_come_from_the_credential_secret(world: World, proxy: ForwardProxy) -> None:
    """credentialSecretRef's username/password reach the proxy (they replace the URL's own user info),
    and the proxy settings are copied to the EphemeralRunnerSet."""
    w = world
    await create_secret(w.client, w.namespace, "proxy-credentials", username="test", password="password")
    setting = {"http": {"url": f"http://url-user:url-pass@{proxy.address}", "credentialSecretRef": "proxy-credentials"}}
    await w.start()
    await w.client.create(w.ars(githubConfigUrl=via_proxy(w.service), proxy=setting))

    ers = await eventually(lambda: w.find(ERS, w.name))
    assert ers["spec"]["ephemeralRunnerSpec"]["proxy"] == setting
    await eventually(lambda: scale_set_id_of(w))
    seen = relayed(proxy)
    assert seen
    assert {r.credentials for r in seen} == {"test:password"}


# Upstream: Context "When specifying a configmap for root CAs"
#   It "should be able to make requests to a server using root CAs"
#   It "it creates a listener referencing the right configmap for TLS"
#   It "it creates an ephemeral runner set referencing the right configmap for TLS"
async def test_ars_trusts_the_config_map_ca_and_hands_it_on(
    world: World, tls_service: tuple[FakeActionsService, str]
) -> None:
    """Registered over HTTPS with the ConfigMap's CA; the listener and the runner set carry the same reference."""
    w = world
    service, ca_pem = tls_service
    await create_secret(w.client, w.namespace, "github-config-tls", github_token=service.github.pat)
    await create_ca_config_map(w.client, w.namespace, ca_pem)
    await w.start(tls=True)
    ars = await w.client.create(
        w.ars(githubConfigUrl=service.config_url(), githubConfigSecret="github-config-tls", githubServerTLS=TLS)
    )

    scale_set_id = await eventually(lambda: scale_set_id_of(w))
    assert service.state.scale_set(scale_set_id).name == w.name
    listener = await eventually(lambda: w.listener_of(ars))
    assert listener["spec"]["githubServerTLS"] == TLS
    ers = await eventually(lambda: w.find(ERS, w.name))
    assert ers["spec"]["ephemeralRunnerSpec"]["githubServerTLS"] == TLS


# ---- EphemeralRunnerSet --------------------------------------------------------------------


# Upstream: Describe "Test EphemeralRunnerSet controller with proxy settings"
#   It "should configure the actions client to use proxy details"
async def test_ers_removes_runners_with_a_proxied_client(harness: Harness, proxy: ForwardProxy) -> None:
    """Scaling down needs the Actions client; its GitHub-side calls carry the proxy credentials."""
    h = harness
    await create_secret(h.client, h.namespace, "proxy-credentials", username="test", password="password")
    await h.start(runner=False)
    setting = {"http": {"url": proxy.url, "credentialSecretRef": "proxy-credentials"}}
    await h.client.create(
        h.runner_set(replicas=1, ephemeralRunnerSpec={"githubConfigUrl": via_proxy(h.service), "proxy": setting})
    )
    await scale_down_a_registered_runner(h, 2_000_000_001)  # an id no runner of the shared fake has

    async def proxied() -> bool:
        return any(r.credentials == "test:password" for r in relayed(proxy))

    await eventually(proxied)
    await eventually(lambda: _no_runners(h))
    assert {r.credentials for r in relayed(proxy)} == {"test:password"}


# Upstream: Describe "Test EphemeralRunnerSet controller with custom root CA"
#   It "should be able to make requests to a server using root CAs"
async def test_ers_trusts_the_config_map_ca(harness: Harness, tls_service: tuple[FakeActionsService, str]) -> None:
    """The runner carries the set's TLS reference, and the set's own client reaches the HTTPS service."""
    h = harness
    service, ca_pem = tls_service
    await create_secret(h.client, h.namespace, "github-config-tls", github_token=service.github.pat)
    await create_ca_config_map(h.client, h.namespace, ca_pem)
    scale_set = service.state.create_scale_set({"name": h.namespace, "runnerGroupId": 1})
    await h.start(runner=False)
    spec = {
        "githubConfigUrl": service.config_url(),
        "githubConfigSecret": "github-config-tls",
        "runnerScaleSetId": scale_set.id,
        "githubServerTLS": TLS,
    }
    await h.client.create(h.runner_set(replicas=1, ephemeralRunnerSpec=spec))
    found = await eventually(lambda: one_runner(h))
    assert found["spec"]["githubServerTLS"] == TLS

    removals = service.requests("remove_runner")
    await scale_down_a_registered_runner(h, 2_000_000_002)
    await eventually(lambda: _no_runners(h))
    assert service.requests("remove_runner") > removals


async def _no_runners(h: Harness) -> bool:
    return not await h.runners()


# ---- EphemeralRunner -----------------------------------------------------------------------


# Upstream: Describe "EphemeralRunner" / Describe "Pod proxy config"
#   It "uses an actions client with proxy transport"
async def test_er_registers_through_the_proxy(harness: Harness, proxy: ForwardProxy) -> None:
    """The runner's JIT registration uses a client whose GitHub-side calls carry the proxy credentials."""
    h = harness
    await create_secret(h.client, h.namespace, "proxy-credentials", username="test", password="password")
    await h.start(runner_set=False)
    setting = {"http": {"url": proxy.url, "credentialSecretRef": "proxy-credentials"}}
    await h.client.create(runner(h, config_url=via_proxy(h.service), scale_set_id=h.scale_set_id, proxy=setting))

    registered = await eventually(lambda: runner_id(h))
    assert registered in h.service.state.runners
    seen = relayed(proxy)
    assert any(r.url.endswith("/actions/runners/registration-token") for r in seen)
    assert {r.credentials for r in seen} == {"test:password"}


# Upstream: Describe "Pod proxy config"
#   It "It should create EphemeralRunner with proxy environment variables using ProxySecretRef"
async def test_er_pod_reads_the_proxy_from_the_proxy_secret(harness: Harness) -> None:
    h = harness
    await h.start(runner_set=False)
    setting = {
        "http": {"url": "http://proxy.example.com:8080"},
        "https": {"url": "http://proxy.example.com:8080"},
        "noProxy": ["example.com"],
    }
    await h.client.create(
        runner(
            h,
            config_url=h.service.config_url(),  # loopback: reached directly, whatever the proxy says
            scale_set_id=h.scale_set_id,
            proxy=setting,
            proxySecretRef="proxy-secret",
        )
    )

    pod = await eventually(lambda: _pod(h))
    env = pod["spec"]["containers"][0]["env"]
    for name in ("http_proxy", "https_proxy", "no_proxy"):
        assert {"name": name, "valueFrom": {"secretKeyRef": {"name": "proxy-secret", "key": name}}} in env


async def _pod(h: Harness) -> dict[str, Any] | None:
    try:
        return await h.get(POD, h.namespace)
    except Exception:
        return None


# Upstream: Describe "TLS config"
#   It "should be able to make requests to a server using root CAs"
async def test_er_registers_over_https_with_the_config_map_ca(
    harness: Harness, tls_service: tuple[FakeActionsService, str]
) -> None:
    h = harness
    service, ca_pem = tls_service
    await create_secret(h.client, h.namespace, "github-config-tls", github_token=service.github.pat)
    await create_ca_config_map(h.client, h.namespace, ca_pem)
    scale_set = service.state.create_scale_set({"name": h.namespace, "runnerGroupId": 1})
    await h.start(runner_set=False)
    await h.client.create(
        runner(
            h,
            config_url=service.config_url(),
            scale_set_id=scale_set.id,
            secret="github-config-tls",
            githubServerTLS=TLS,
        )
    )

    registered = await eventually(lambda: runner_id(h))
    assert service.state.runners[registered].scale_set_id == scale_set.id
