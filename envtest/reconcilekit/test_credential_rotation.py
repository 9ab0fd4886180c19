"""Must-show (issue 16, item 3): a rotated ServiceAccount token costs at most one failed write.

The ServiceAccount's token comes from a TokenRequest bound to a Secret; rotation mints a
token bound to a second Secret, writes it where the kubeconfig's credential comes from, and
deletes the first Secret, after which kube-apiserver rejects the old token (once its 10 s
authentication cache lets go: the test waits until a probe with the old token gets 401).
Then 20 writes follow, every 0.25 s. Two kubeconfigs: an exec plugin (a shell script of
this test that prints an ExecCredential with the token in a file) and a ``tokenFile``. A watch
opened before the rotation keeps delivering the new objects. ``pytest -s`` prints the numbers.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from rk_support import CM, configmap

from reconcilekit.client import GroupVersionKind, ObjectKey, RestClient, new_client
from reconcilekit.client.metrics import RequestKey
from reconcilekit.config import RestConfig, load_rest_config
from reconcilekit.errors import UnauthorizedError
from reconcilekit.testing import eventually

pytestmark = [pytest.mark.slow]

SA, ROLE = GroupVersionKind("", "v1", "ServiceAccount"), GroupVersionKind("rbac.authorization.k8s.io", "v1", "Role")
BINDING = GroupVersionKind("rbac.authorization.k8s.io", "v1", "RoleBinding")
SECRET = GroupVersionKind("", "v1", "Secret")
ACCOUNT = "rotating"
WRITES = 20


async def _grant(client: RestClient, namespace: str) -> None:
    meta = {"name": ACCOUNT, "namespace": namespace}
    await client.create({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta})
    rule = {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch", "create"]}
    await client.create(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta, "rules": [rule]}
    )
    await client.create(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": ACCOUNT},
            "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": namespace}],
        }
    )


async def _bound_token(client: RestClient, namespace: str, secret: str) -> str:
    """A token of the ServiceAccount bound to a new Secret ``secret`` (deleting it revokes the token)."""
    created = await client.create(
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret, "namespace": namespace}}
    )
    ref = {"apiVersion": "v1", "kind": "Secret", "name": secret, "uid": created["metadata"]["uid"]}
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"boundObjectRef": ref}}
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": ACCOUNT, "namespace": namespace}}
    answer = await client.sub_resource("token").create(account, request)
    return str(answer["status"]["token"])


def _write_atomically(path: Path, text: str) -> None:
    part = path.with_suffix(".part")
    part.write_text(text)
    os.replace(part, path)


def _kubeconfig(env: Any, folder: Path, *, mode: str) -> Path:
    admin = yaml.safe_load(env.kubeconfig_path.read_text())
    user: dict[str, Any]
    if mode == "exec":
        plugin = folder / "plugin.sh"
        plugin.write_text(
            "#!/bin/sh\n"
            f'echo run >> "{folder}/runs"\n'
            'expiry=$(date -u -d "+1 hour" +%Y-%m-%dT%H:%M:%SZ)\n'
            'printf \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",'
            f'"status":{{"token":"%s","expirationTimestamp":"%s"}}}}\' "$(cat {folder}/token)" "$expiry"\n'
        )
        plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
        user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "./plugin.sh"}}
    else:
        user = {"tokenFile": "token"}
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": admin["clusters"],
        "users": [{"name": ACCOUNT, "user": user}],
        "contexts": [{"name": ACCOUNT, "context": {"cluster": admin["clusters"][0]["name"], "user": ACCOUNT}}],
        "current-context": ACCOUNT,
    }
    path = folder / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


async def _rejected(config: RestConfig, token: str, namespace: str) -> bool:
    probe = RestConfig(host=config.host, ca_file=config.ca_file, ca_data=config.ca_data, bearer_token=token)
    async with new_client(probe, timeout=10.0) as c:
        try:
            await c.get(CM, ObjectKey(namespace, "probe"))
        except UnauthorizedError:
            return True
        except Exception:
            return False
        return False


async def _rotate_and_write(
    envtest_environment: Any, client: RestClient, namespace: str, folder: Path, *, mode: str
) -> dict[str, int]:
    await _grant(client, namespace)
    token_file = folder / "token"
    _write_atomically(token_file, await _bound_token(client, namespace, "bound-1"))
    config = await load_rest_config(_kubeconfig(envtest_environment, folder, mode=mode))
    seen: list[str] = []
    async with new_client(config, field_owner="rotation-test", timeout=30.0) as sa:

        async def watch() -> None:
            while True:  # a new watch (after a timeout) would authenticate afresh; count connections
                async for event in sa.watch(CM, namespace=namespace, timeout_seconds=300):
                    if event.type != "BOOKMARK":
                        seen.append(event.object["metadata"]["name"])

        watcher = asyncio.create_task(watch(), name="rotation-watch")

        def watched(names: set[str]) -> bool:
            if watcher.done():
                watcher.result()  # the watch died: say why
            return names <= set(seen)

        try:
            for i in range(3):
                await sa.create(configmap(f"before-{i}", namespace))
            await eventually(lambda: watched({"before-0", "before-1", "before-2"}), timeout=30)

            old = token_file.read_text()
            _write_atomically(token_file, await _bound_token(client, namespace, "bound-2"))
            await client.delete(
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bound-1", "namespace": namespace}}
            )
            await eventually(lambda: _rejected(config, old, namespace), timeout=60, interval=0.5)

            failed = 0
            for i in range(WRITES):
                try:
                    await sa.create(configmap(f"after-{i}", namespace))
                except UnauthorizedError:
                    failed += 1
                await asyncio.sleep(0.25)
            want = {f"after-{i}" for i in range(WRITES)}
            await eventually(lambda: watched(want), timeout=30)
            watch_requests = sum(n for k, n in sa.request_counts().items() if k.verb == "watch")
            unauthorized = sum(n for k, n in sa.request_counts().items() if k.code == 401)
        finally:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
    runs_file = folder / "runs"
    runs = len(runs_file.read_text().splitlines()) if runs_file.exists() else 0
    return {
        "failed_writes": failed,
        "unauthorized_answers": unauthorized,
        "plugin_runs": runs,
        "watch_requests": watch_requests,
        "creates_answered_201": sa.request_counts().get(RequestKey("create", "configmaps", 201), 0),
    }


@pytest.mark.parametrize("mode", ["exec", "tokenFile"])
async def test_a_rotated_service_account_token_costs_at_most_one_failed_write(
    envtest_environment: Any, client: RestClient, namespace: str, tmp_path: Path, mode: str
) -> None:
    numbers = await _rotate_and_write(envtest_environment, client, namespace, tmp_path, mode=mode)
    print(f"\n{mode}: {numbers}")
    assert numbers["failed_writes"] <= 1
    assert numbers["unauthorized_answers"] <= 1  # at most one 401 for the whole rotation
    assert numbers["watch_requests"] == 1  # the watch opened before the rotation lived through it
    if mode == "exec":
        assert numbers["plugin_runs"] == 2  # at load, and once after the 401
