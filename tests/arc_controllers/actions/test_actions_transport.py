"""The aiohttp transport: an extra root CA for a self-signed service, and HTTP proxies with credentials."""

from __future__ import annotations

import datetime
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from arc_controllers.actions import ActionsError, ProxyConfig, RetryPolicy, SystemInfo, new_client
from arc_controllers.actions.fake import FakeActionsService

RETRY = RetryPolicy(wait_min=0.001, wait_max=0.01, timeout=10.0)


def _certificates(tmp: Path) -> tuple[str, ssl.SSLContext]:
    """A CA and a server certificate for 127.0.0.1 signed by it."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "test root")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    import ipaddress

    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (tmp / "leaf.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (tmp / "leaf.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(tmp / "leaf.pem", tmp / "leaf.key")
    return ca.public_bytes(serialization.Encoding.PEM).decode(), server


# Upstream: client_test.go TestServerWithSelfSignedCertificates
async def test_extra_root_ca_lets_the_client_trust_a_private_service(tmp_path: Path) -> None:
    """Without the CA the TLS failure is not retried; with it the whole exchange works."""
    ca_pem, server_context = _certificates(tmp_path)
    async with FakeActionsService(ssl_context=server_context) as fake:
        assert fake.url.startswith("https://")
        async with new_client(
            fake.config_url(), fake.pat, system_info=SystemInfo(), retry=RETRY, proxy=ProxyConfig()
        ) as untrusting:
            with pytest.raises(ActionsError, match="failed to send request") as caught:
                await untrusting.get_runner_group_by_name("default")
        assert caught.value.attempts == 1
        assert fake.requests("registration_token") == 0
        async with new_client(
            fake.config_url(), fake.pat, system_info=SystemInfo(), retry=RETRY, proxy=ProxyConfig(), root_ca=ca_pem
        ) as trusting:
            assert (await trusting.get_runner_group_by_name("default")).name == "default"
            assert '"has_root_ca":true' in trusting.debug_info()


@pytest.fixture
async def forward_proxy(fake: FakeActionsService) -> AsyncIterator[tuple[str, list[tuple[str, str]]]]:
    """A tiny forward proxy: records (absolute URL, Proxy-Authorization) and relays to the fake."""
    seen: list[tuple[str, str]] = []
    async with aiohttp.ClientSession() as upstream:

        async def relay(request: web.Request) -> web.StreamResponse:
            seen.append((str(request.url), request.headers.get("Proxy-Authorization", "")))
            target = f"{fake.url}{request.rel_url}"
            headers = {k: v for k, v in request.headers.items() if k.lower() not in {"host", "proxy-authorization"}}
            async with upstream.request(request.method, target, headers=headers, data=await request.read()) as answer:
                return web.Response(status=answer.status, body=await answer.read(), headers=dict(answer.headers))

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", relay)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        try:
            yield f"http://user:s3cret@127.0.0.1:{port}", seen
        finally:
            await runner.cleanup()


async def test_http_proxy_carries_github_calls_with_basic_credentials(
    fake: FakeActionsService, forward_proxy: tuple[str, list[tuple[str, str]]]
) -> None:
    """A non-loopback GitHub host goes through HTTP_PROXY (credentials as Proxy-Authorization)."""
    proxy_url, seen = forward_proxy
    port = fake.url.rsplit(":", 1)[1]
    proxy = ProxyConfig.from_environment({"HTTP_PROXY": proxy_url, "NO_PROXY": "no.example"})
    async with new_client(
        f"http://ghes.example:{port}/my-org", fake.pat, system_info=SystemInfo(), retry=RETRY, proxy=proxy
    ) as client:
        assert (await client.get_runner_group_by_name("default")).id == 1
    assert [url.split("/api/v3")[1] for url, _ in seen] == [
        "/orgs/my-org/actions/runners/registration-token",
        "/actions/runner-registration",
    ]
    assert {auth for _, auth in seen} == {"Basic dXNlcjpzM2NyZXQ="}
    assert fake.requests("get_runner_groups") == 1  # the tenant is on loopback: direct, never proxied
