"""A real forward HTTP proxy on loopback, and a CA with a server certificate, for the client-option tests.

`ForwardProxy` answers absolute-form requests (``GET http://host:port/path HTTP/1.1``, what
a client sends to an HTTP proxy), records each one with its ``Proxy-Authorization``
header, and relays it. It relays only to the host names it is given, each mapped to a
loopback address, and answers 502 for any other host: nothing leaves the machine.

Why host names: the Actions client, like Go's ``httpproxy``, never proxies a loopback
host (``127.0.0.1``, ``localhost``), and that rule stays as it is. The tests therefore
name the fake Actions service by a ``.test`` host (RFC 2606: never resolves on a real
network). Only the proxy ever looks that name up, in its own map, so the client's
traffic to it must go through the proxy to arrive at all.

`make_tls` returns a fresh CA (PEM) and a server TLS context whose certificate that CA
signed, valid for ``127.0.0.1`` and ``localhost``.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from yarl import URL

__all__ = ["ForwardProxy", "ProxiedRequest", "TlsMaterial", "make_tls"]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)


@dataclass(frozen=True)
class ProxiedRequest:
    """One request the proxy received: method, absolute URL, and its ``Proxy-Authorization`` (or "")."""

    method: str
    url: str
    proxy_authorization: str

    @property
    def credentials(self) -> str:
        """The ``user:password`` of a Basic ``Proxy-Authorization``; "" without one."""
        scheme, _, value = self.proxy_authorization.partition(" ")
        if scheme.lower() != "basic" or not value:
            return ""
        return base64.b64decode(value).decode()


@dataclass
class ForwardProxy:
    """An HTTP forward proxy on ``127.0.0.1`` (a free port) that relays to the hosts in ``hosts``.

    ``async with ForwardProxy(hosts={"actions.test": "127.0.0.1"}) as proxy:`` then
    `url` is the proxy's URL and `seen` the requests received, oldest first.
    """

    hosts: Mapping[str, str]
    seen: list[ProxiedRequest] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    _session: aiohttp.ClientSession | None = None
    _port: int = 0

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._port}"

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>`` (for a proxy URL with user info)."""
        return f"127.0.0.1:{self._port}"

    async def __aenter__(self) -> ForwardProxy:
        self._session = aiohttp.ClientSession(auto_decompress=False)
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._relay)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _relay(self, request: web.Request) -> web.StreamResponse:
        """Record the request; relay it to the mapped loopback address, or answer 502."""
        target = URL(request.raw_path) if request.raw_path.startswith("http://") else request.url
        self.seen.append(ProxiedRequest(request.method, str(target), request.headers.get("Proxy-Authorization", "")))
        address = self.hosts.get(target.host or "")
        if address is None or self._session is None:
            return web.Response(status=502, text=f"the test proxy does not relay to {target.host}")
        upstream = target.with_host(address)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Host"] = target.raw_authority
        async with self._session.request(
            request.method, upstream, headers=headers, data=await request.read(), allow_redirects=False
        ) as answer:
            body = await answer.read()
            kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_BY_HOP}
            return web.Response(status=answer.status, body=body, headers=kept)


@dataclass(frozen=True)
class TlsMaterial:
    """A CA certificate (PEM) and a server context presenting a certificate it signed."""

    ca_pem: str
    server_context: ssl.SSLContext


def make_tls() -> TlsMaterial:
    """A new CA and a server certificate for ``127.0.0.1``/``localhost`` (blocking: run it in a thread)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "arc envtest root CA")])
    ca = (
        _valid(x509.CertificateBuilder(), now)
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),  # cert and CRL signing
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        _valid(x509.CertificateBuilder(), now)
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake actions service")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
            critical=False,
        )
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory() as tmp:
        cert_path, key_path = Path(tmp) / "server.crt", Path(tmp) / "server.key"
        cert_path.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        context.load_cert_chain(cert_path, key_path)
    return TlsMaterial(ca.public_bytes(serialization.Encoding.PEM).decode(), context)


def _valid(builder: Any, now: datetime.datetime) -> Any:
    """A serial number and a validity window of an hour either side of now."""
    return (
        builder.serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(hours=1))
    )
