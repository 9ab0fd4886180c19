"""The envtest PKI: serving, client and service-account material that kube-apiserver accepts."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import tempfile
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from cryptography.x509.verification import DNSName, IPAddress, PolicyBuilder, Store

from reconcilekit.envtest._http import ssl_context
from reconcilekit.envtest._kubeconfig import ClusterAccess
from reconcilekit.envtest._pki import CERT_VALIDITY, ControlPlanePKI, generate_control_plane_pki


@pytest.fixture(scope="module")
def pki() -> ControlPlanePKI:
    return generate_control_plane_pki()


def _cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


def _names(cert: x509.Certificate, oid: x509.ObjectIdentifier) -> list[str]:
    return [str(a.value) for a in cert.subject.get_attributes_for_oid(oid)]


@pytest.mark.parametrize("name", ["localhost", "127.0.0.1", "::1"])
def test_serving_cert_chain_verifies_for_loopback_names(pki: ControlPlanePKI, name: str) -> None:
    """The serving certificate verifies against the serving CA for localhost, 127.0.0.1 and ::1."""
    try:
        subject: DNSName | IPAddress = IPAddress(ipaddress.ip_address(name))
    except ValueError:
        subject = DNSName(name)
    verifier = PolicyBuilder().store(Store([_cert(pki.serving_ca.ca.cert_pem)])).build_server_verifier(subject)
    chain = verifier.verify(_cert(pki.serving.cert_pem), [])
    assert chain[-1] == _cert(pki.serving_ca.ca.cert_pem)


def test_admin_cert_is_admin_in_system_masters_signed_by_client_ca(pki: ControlPlanePKI) -> None:
    """The admin certificate says CN=admin, O=system:masters, clientAuth, and is signed by the client CA only."""
    admin = _cert(pki.admin.cert_pem)
    admin.verify_directly_issued_by(_cert(pki.client_ca.ca.cert_pem))
    with pytest.raises((ValueError, InvalidSignature)):
        admin.verify_directly_issued_by(_cert(pki.serving_ca.ca.cert_pem))
    assert _names(admin, NameOID.COMMON_NAME) == ["admin"]
    assert _names(admin, NameOID.ORGANIZATION_NAME) == ["system:masters"]
    eku = admin.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_client_cert_carries_user_and_every_group(pki: ControlPlanePKI) -> None:
    """A user's certificate has CN = the name and one O per group, in order."""
    cert = _cert(pki.client_ca.new_client_cert("alice", ["devs", "ops"]).cert_pem)
    assert _names(cert, NameOID.COMMON_NAME) == ["alice"]
    assert _names(cert, NameOID.ORGANIZATION_NAME) == ["devs", "ops"]


def test_every_key_is_ecdsa_p256_and_valid_seven_days(pki: ControlPlanePKI) -> None:
    """All keys are ECDSA P-256 and all certificates expire 7 days from now, like upstream's tinyca."""
    for pair in (pki.serving_ca.ca, pki.serving, pki.client_ca.ca, pki.service_account_signer, pki.admin):
        cert = _cert(pair.cert_pem)
        key = cert.public_key()
        assert isinstance(key, ec.EllipticCurvePublicKey)
        assert key.curve.name == "secp256r1"
        left = cert.not_valid_after_utc - datetime.datetime.now(datetime.UTC)
        assert CERT_VALIDITY - datetime.timedelta(minutes=1) < left <= CERT_VALIDITY


def test_three_independent_authorities(pki: ControlPlanePKI) -> None:
    """Serving CA, client CA and service-account signer are different keys, each a CA."""
    certs = [_cert(p.cert_pem) for p in (pki.serving_ca.ca, pki.client_ca.ca, pki.service_account_signer)]
    assert len({c.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo) for c in certs}) == 3
    for cert in certs:
        assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


async def test_mutual_tls_handshake_with_the_generated_pki(pki: ControlPlanePKI) -> None:
    """A server using the serving cert and requiring client certs accepts the admin via the harness ssl context."""
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "s.crt").write_bytes(pki.serving.cert_pem)
        (Path(tmp) / "s.key").write_bytes(pki.serving.key_pem)
        server_ctx.load_cert_chain(Path(tmp) / "s.crt", Path(tmp) / "s.key")
    server_ctx.load_verify_locations(cadata=pki.client_ca.ca.cert_pem.decode())
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    seen: list[dict[str, Any]] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(writer.get_extra_info("peercert"))
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_ctx)
    port = server.sockets[0].getsockname()[1]
    access = ClusterAccess(
        server=f"https://127.0.0.1:{port}",
        ca_pem=pki.serving_ca.ca.cert_pem,
        client_cert_pem=pki.admin.cert_pem,
        client_key_pem=pki.admin.key_pem,
    )
    async with server:
        _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=ssl_context(access))
        await asyncio.sleep(0.05)
        writer.close()
        await writer.wait_closed()
    assert seen
    subject = dict(item[0] for item in seen[0]["subject"])
    assert subject == {"commonName": "admin", "organizationName": "system:masters"}
