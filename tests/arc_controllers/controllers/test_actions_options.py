"""An object's proxy and root-CA settings: how they resolve, and how they pick (or rebuild) a cached client."""

from __future__ import annotations

import asyncio
import base64
import datetime
import json
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from structlog.testing import capture_logs

from arc_controllers.actions.proxy import ProxyConfig as ProxyRule
from arc_controllers.controllers.actions_options import ClientConfigError, resolve_client_options
from arc_controllers.controllers.actions_seam import SecretActionsClientFactory
from reconcilekit.client.interfaces import GroupVersionKind, ObjectKey
from reconcilekit.errors import NotFoundError, is_not_found
from reconcilekit.testing.fake_client import FakeClient

NS = "arc-runners"
TOKEN = "ghp_unit-test-token-value"
PASSWORD = "pr0xy-pa55word"
CONFIG_MAP = GroupVersionKind("", "v1", "ConfigMap")
SECRET = GroupVersionKind("", "v1", "Secret")
TLS = {"certificateFrom": {"configMapKeyRef": {"name": "root-ca", "key": "ca.crt"}}}
PROXY = {
    "http": {"url": "http://proxy.example:3128", "credentialSecretRef": "proxy-creds"},
    "https": {"url": "http://proxy.example:3129"},
    "noProxy": ["example.com", "10.0.0.0/8"],
}


def ca_pem(common_name: str = "unit test root") -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def secret(name: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": NS},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def config_map(pem: str, *, key: str = "ca.crt") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "root-ca", "namespace": NS},
        "data": {key: pem},
    }


def cluster(*objects: dict[str, Any]) -> FakeClient:
    return FakeClient(
        [secret("gh", github_token=TOKEN), secret("proxy-creds", username="test", password=PASSWORD), *objects]
    )


def runner(*, name: str = "r", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "actions.github.com/v1alpha1",
        "kind": "EphemeralRunner",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"githubConfigUrl": "https://github.com/org", "githubConfigSecret": "gh", **spec},
    }


class Built:
    def __init__(self, url: str, *, proxy: ProxyRule | None, root_ca: str) -> None:
        self.url, self.proxy, self.root_ca, self.closed = url, proxy, root_ca, False

    async def aclose(self) -> None:
        self.closed = True


class Builder:
    def __init__(self) -> None:
        self.built: list[Built] = []

    def __call__(self, url: str, credentials: Any, *, system_info: Any, proxy: Any, root_ca: str) -> Built:
        self.built.append(Built(url, proxy=proxy, root_ca=root_ca))
        return self.built[-1]


# ---- resolution ---------------------------------------------------------------------------


async def test_no_settings_resolve_to_the_environment_proxy_and_system_roots() -> None:
    """Without spec.proxy the client follows the environment (proxy None); without TLS, no extra CA."""
    options = await resolve_client_options(cluster(), namespace=NS, proxy=None, tls=None)
    assert options.proxy is None
    assert options.root_ca == ""


async def test_proxy_urls_carry_the_credential_secret_and_the_no_proxy_list() -> None:
    """credentialSecretRef's username/password become the URL's user info; noProxy is joined by commas."""
    options = await resolve_client_options(cluster(), namespace=NS, proxy=PROXY, tls=None)
    assert options.proxy is not None
    assert options.proxy.http_proxy == f"http://test:{PASSWORD}@proxy.example:3128"
    assert options.proxy.https_proxy == "http://proxy.example:3129"
    assert options.proxy.no_proxy == "example.com,10.0.0.0/8"
    assert options.proxy.proxy_for("http://ghes.example/api") == options.proxy.http_proxy
    assert options.proxy.proxy_for("https://example.com/api") is None
    assert PASSWORD not in repr(options)


async def test_credentials_replace_user_info_already_in_the_url() -> None:
    """Upstream's "proxy with user info" case: the secret's credentials win over the URL's."""
    proxy = {"http": {"url": "http://old:stale@proxy.example:3128", "credentialSecretRef": "proxy-creds"}}
    options = await resolve_client_options(cluster(), namespace=NS, proxy=proxy, tls=None)
    assert options.proxy is not None
    assert options.proxy.http_proxy == f"http://test:{PASSWORD}@proxy.example:3128"


async def test_an_empty_proxy_setting_proxies_nothing_and_ignores_the_environment() -> None:
    """As Go: a non-nil spec.proxy installs a proxy function, even one that never proxies."""
    options = await resolve_client_options(cluster(), namespace=NS, proxy={}, tls=None)
    assert options.proxy == ProxyRule()
    assert options.proxy.proxy_for("http://ghes.example/") is None


async def test_a_missing_credential_secret_is_a_clear_error_without_the_url() -> None:
    """The error names the secret; the NotFound is chained; no proxy URL or password in the text."""
    reader = FakeClient([secret("gh", github_token=TOKEN)])
    proxy = {"http": {"url": f"http://u:{PASSWORD}@proxy.example:3128", "credentialSecretRef": "proxy-creds"}}
    with pytest.raises(ClientConfigError, match=f"failed to get kubernetes secret {NS}/proxy-creds") as caught:
        await resolve_client_options(reader, namespace=NS, proxy=proxy, tls=None)
    assert isinstance(caught.value.__cause__, NotFoundError)
    assert is_not_found(caught.value)
    assert PASSWORD not in str(caught.value)


async def test_an_unparsable_proxy_url_is_reported_without_its_password() -> None:
    proxy = {"http": {"url": f"http://user:{PASSWORD}@proxy.example:notaport"}}
    with pytest.raises(ClientConfigError, match="failed to parse proxy url") as caught:
        await resolve_client_options(cluster(), namespace=NS, proxy=proxy, tls=None)
    assert PASSWORD not in str(caught.value)
    assert "proxy.example:notaport" in str(caught.value)


async def test_the_root_ca_is_the_config_map_value() -> None:
    pem = ca_pem()
    options = await resolve_client_options(cluster(config_map(pem)), namespace=NS, proxy=None, tls=TLS)
    assert options.root_ca == pem


async def test_a_missing_config_map_is_a_clear_error() -> None:
    with pytest.raises(ClientConfigError, match=f"failed to fetch key 'ca.crt' in configmap {NS}/root-ca") as caught:
        await resolve_client_options(cluster(), namespace=NS, proxy=None, tls=TLS)
    assert isinstance(caught.value.__cause__, NotFoundError)


async def test_a_missing_key_is_a_clear_error() -> None:
    with pytest.raises(ClientConfigError, match=f"key 'ca.crt' in configmap {NS}/root-ca is missing"):
        await resolve_client_options(cluster(config_map(ca_pem(), key="other")), namespace=NS, proxy=None, tls=TLS)


async def test_a_value_without_a_certificate_is_a_clear_error() -> None:
    bad = "-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n"
    with pytest.raises(ClientConfigError, match="failed to parse certificate"):
        await resolve_client_options(cluster(config_map(bad)), namespace=NS, proxy=None, tls=TLS)


@pytest.mark.parametrize(
    ("tls", "message"),
    [({}, "certificateFrom not specified"), ({"certificateFrom": {}}, "configMapKeyRef not specified")],
)
async def test_an_incomplete_tls_setting_is_a_clear_error(tls: dict[str, Any], message: str) -> None:
    with pytest.raises(ClientConfigError, match=message):
        await resolve_client_options(cluster(), namespace=NS, proxy=None, tls=tls)


# ---- the client cache ---------------------------------------------------------------------


async def test_the_factory_builds_the_client_with_the_resolved_proxy_and_ca() -> None:
    pem = ca_pem()
    builder = Builder()
    factory = SecretActionsClientFactory(cluster(config_map(pem)), build_client=builder)
    await factory(runner(proxy=PROXY, githubServerTLS=TLS))
    [built] = builder.built
    assert built.proxy is not None
    assert built.proxy.http_proxy == f"http://test:{PASSWORD}@proxy.example:3128"
    assert built.root_ca == pem
    await factory.aclose()


async def test_an_ephemeral_runner_set_is_read_under_its_runner_spec() -> None:
    pem = ca_pem()
    builder = Builder()
    factory = SecretActionsClientFactory(cluster(config_map(pem)), build_client=builder)
    runner_set = {
        "kind": "EphemeralRunnerSet",
        "metadata": {"name": "s", "namespace": NS},
        "spec": {"ephemeralRunnerSpec": runner(proxy=PROXY, githubServerTLS=TLS)["spec"]},
    }
    await factory(runner_set)
    assert builder.built[0].proxy is not None
    assert builder.built[0].root_ca == pem
    await factory.aclose()


async def test_objects_differing_only_in_proxy_or_tls_get_their_own_clients() -> None:
    """The cache key counts the proxy and the TLS setting: a proxied object never gets a direct client."""
    builder = Builder()
    factory = SecretActionsClientFactory(cluster(config_map(ca_pem())), build_client=builder)
    plain = await factory.scale_set_client(runner())
    proxied = await factory.scale_set_client(runner(proxy=PROXY))
    trusting = await factory.scale_set_client(runner(githubServerTLS=TLS))
    assert len({id(plain), id(proxied), id(trusting)}) == 3
    assert [b.proxy is not None for b in builder.built] == [False, True, False]
    assert [bool(b.root_ca) for b in builder.built] == [False, False, True]
    assert await factory.scale_set_client(runner(name="other", proxy=PROXY)) is proxied  # same settings: shared
    await factory.aclose()


async def test_a_changed_ca_builds_a_new_client_and_an_unchanged_one_keeps_it() -> None:
    reader = cluster(config_map(ca_pem("first")))
    builder = Builder()
    factory = SecretActionsClientFactory(reader, ttl=0.0, build_client=builder)
    first = await factory.scale_set_client(runner(githubServerTLS=TLS))
    assert await factory.scale_set_client(runner(githubServerTLS=TLS)) is first
    live = await reader.get(CONFIG_MAP, ObjectKey(NS, "root-ca"))
    rotated = ca_pem("second")
    live["data"] = {"ca.crt": rotated}
    await reader.update(live)
    second = await factory.scale_set_client(runner(githubServerTLS=TLS))
    assert second is not first
    assert second.root_ca == rotated
    assert not first.closed  # retired, closed by aclose
    await factory.aclose()
    assert first.closed
    assert second.closed


async def test_a_rotated_proxy_password_builds_a_new_client() -> None:
    reader = cluster()
    builder = Builder()
    factory = SecretActionsClientFactory(reader, ttl=0.0, build_client=builder)
    first = await factory.scale_set_client(runner(proxy=PROXY))
    live = await reader.get(SECRET, ObjectKey(NS, "proxy-creds"))
    live["data"]["password"] = base64.b64encode(b"rotated-password").decode()
    await reader.update(live)
    second = await factory.scale_set_client(runner(proxy=PROXY))
    assert second is not first
    assert second.proxy.http_proxy == "http://test:rotated-password@proxy.example:3128"
    await factory.aclose()


async def test_a_bad_ca_fails_only_that_objects_client() -> None:
    """The failing object gets the error on every call; other objects are served; nothing bad is cached."""
    bad = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
    reader = cluster(config_map(bad))
    builder = Builder()
    factory = SecretActionsClientFactory(reader, build_client=builder)
    results = await asyncio.gather(
        factory(runner(name="a", githubServerTLS=TLS)), factory(runner(name="b")), return_exceptions=True
    )
    assert isinstance(results[0], ClientConfigError)
    assert not isinstance(results[1], BaseException)
    with pytest.raises(ClientConfigError, match="failed to parse certificate"):
        await factory(runner(name="a", githubServerTLS=TLS))
    assert len(builder.built) == 1
    live = await reader.get(CONFIG_MAP, ObjectKey(NS, "root-ca"))
    live["data"] = {"ca.crt": ca_pem()}
    await reader.update(live)
    await factory(runner(name="a", githubServerTLS=TLS))  # fixed: the next reconcile succeeds
    assert len(builder.built) == 2
    await factory.aclose()


async def test_no_secret_value_reaches_a_log_line() -> None:
    """The token, the proxy password and the proxy URLs never appear in what the factory logs."""
    builder = Builder()
    factory = SecretActionsClientFactory(cluster(config_map(ca_pem())), build_client=builder)
    with capture_logs() as events:
        await factory(runner(proxy=PROXY, githubServerTLS=TLS))
        with pytest.raises(ClientConfigError):
            await factory(runner(proxy={"http": {"url": "http://x:1", "credentialSecretRef": "nope"}}))
    text = json.dumps(events, default=repr)
    assert "built actions client" in text
    for leaked in (TOKEN, PASSWORD, "proxy.example", "BEGIN CERTIFICATE"):
        assert leaked not in text
    await factory.aclose()
