"""A tiny certificate authority for a throw-away control plane.

Three independent key pairs, as upstream envtest has them:

* the serving CA ("envtest-environment", O=envtest) signs kube-apiserver's
  serving certificate (CN=localhost, SANs ``localhost``, ``127.0.0.1``, ``::1``);
* the client CA signs one certificate per user: CN = user name, O = groups;
* the service-account signer, a self-signed certificate whose key signs tokens.

Every key is ECDSA P-256 and every certificate is valid 7 days (from 5 minutes
ago, to absorb clock skew). All functions here are CPU-bound and blocking: call
them through `asyncio.to_thread`.

Ports: sigs.k8s.io/controller-runtime/pkg/internal/testing/certs/tinyca.go
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["CERT_VALIDITY", "SERVING_NAMES", "ControlPlanePKI", "KeyPair", "TinyCA", "generate_control_plane_pki"]

CERT_VALIDITY = datetime.timedelta(days=7)
"""How long every certificate is valid: 168 hours, as upstream."""

_BACKDATE = datetime.timedelta(minutes=5)
"""How far in the past ``notBefore`` is set, so a small clock skew cannot reject a fresh cert."""

SERVING_NAMES = ("localhost", "127.0.0.1", "::1")
"""SANs of kube-apiserver's serving certificate: the loopback name and addresses."""


@dataclass(frozen=True, slots=True)
class KeyPair:
    """A certificate and its private key, both PEM.

    Ports: certs.CertPair (as PEM, which is all we ever need)
    """

    cert_pem: bytes
    """The certificate, PEM (``-----BEGIN CERTIFICATE-----``)."""

    key_pem: bytes
    """The private key, unencrypted PKCS#8 PEM. Never log it."""


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _name(common_name: str, organizations: Sequence[str] = ()) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    return x509.Name(attrs)


def _key_usage(*, ca: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=not ca,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=ca,
        crl_sign=ca,
        encipher_only=False,
        decipher_only=False,
    )


def _self_signed(key: ec.EllipticCurvePrivateKey, subject: x509.Name) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + CERT_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_key_usage(ca=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )


class TinyCA:
    """A self-signed CA that issues serving and client certificates.

    Constructing one generates its key (blocking, about a millisecond).

    Ports: certs.TinyCA
    """

    def __init__(self, *, common_name: str = "envtest-environment", organization: str = "envtest") -> None:
        self._key = _new_key()
        self._cert = _self_signed(self._key, _name(common_name, [organization]))
        self.ca = KeyPair(_cert_pem(self._cert), _key_pem(self._key))
        """The CA's own certificate and key."""

    def _issue(
        self, subject: x509.Name, *, usage: x509.ObjectIdentifier, sans: Sequence[x509.GeneralName] = ()
    ) -> KeyPair:
        key = _new_key()
        now = datetime.datetime.now(datetime.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _BACKDATE)
            .not_valid_after(now + CERT_VALIDITY)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_key_usage(ca=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(list(sans)), critical=False)
        return KeyPair(_cert_pem(builder.sign(self._key, hashes.SHA256())), _key_pem(key))

    def new_serving_cert(self, names: Sequence[str] = SERVING_NAMES) -> KeyPair:
        """Issue a server certificate (EKU serverAuth) for ``names``.

        Args:
            names: DNS names and IP addresses; each IP literal becomes an IP SAN
                (Python's ``ssl`` checks IP SANs when connecting to an address),
                every other name a DNS SAN. The first name is the CN.

        Ports: TinyCA.NewServingCert
        """
        sans: list[x509.GeneralName] = []
        for name in names:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(name)))
            except ValueError:
                sans.append(x509.DNSName(name))
        return self._issue(_name(names[0]), usage=ExtendedKeyUsageOID.SERVER_AUTH, sans=sans)

    def new_client_cert(self, name: str, groups: Sequence[str] = ()) -> KeyPair:
        """Issue a client certificate (EKU clientAuth): kube-apiserver reads CN as the user, O as groups.

        Ports: TinyCA.NewClientCert
        """
        return self._issue(_name(name, groups), usage=ExtendedKeyUsageOID.CLIENT_AUTH)


@dataclass(frozen=True, slots=True)
class ControlPlanePKI:
    """Everything kube-apiserver and its admin need, generated together.

    Python only: upstream builds these in three places (CertAuthn, the
    apiserver's cert-dir set-up and the service-account signer).
    """

    serving_ca: TinyCA
    """Signs `serving`; its certificate is the kubeconfig's ``certificate-authority-data``."""

    serving: KeyPair
    """kube-apiserver's serving certificate and key."""

    client_ca: TinyCA
    """Signs every user's client certificate; kube-apiserver's ``--client-ca-file``."""

    service_account_signer: KeyPair
    """Signs service-account tokens; its certificate doubles as the verification key."""

    admin: KeyPair
    """The ``admin`` user in ``system:masters``: the harness's own identity."""


def generate_control_plane_pki() -> ControlPlanePKI:
    """Generate the serving CA and cert, the client CA, the SA signer and the admin user (blocking).

    Ports: controlplane.CertAuthn.Start, APIServer.setProcessState's cert set-up and
    Environment.Start's admin user, together
    """
    serving_ca = TinyCA()
    client_ca = TinyCA(common_name="envtest-client-ca")
    signer = TinyCA(common_name="envtest-service-account-signer")
    return ControlPlanePKI(
        serving_ca=serving_ca,
        serving=serving_ca.new_serving_cert(),
        client_ca=client_ca,
        service_account_signer=signer.ca,
        admin=client_ca.new_client_cert("admin", ["system:masters"]),
    )
