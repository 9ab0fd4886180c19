"""Save the Kubernetes schemas our CRDs embed, read from a real kube-apiserver.

Starts etcd and kube-apiserver from $KUBEBUILDER_ASSETS on loopback ports (a
static bearer token for a system:masters user, self-signed serving cert), reads
``/openapi/v3/api/v1``, inlines the schemas the way controller-gen does
(`arc_controllers.api.v1alpha1.k8sschema.inline_schemas`) and writes
``src/arc_controllers/api/v1alpha1/data/k8s_schemas.json`` (compact, sorted keys).
Both processes are stopped before it returns, also on failure.

Usage: KUBEBUILDER_ASSETS=... python hack/snapshot_k8s_schemas.py   (or ``make k8s-schemas``)

Python only: a developer tool; controller-gen reads the Go types instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from arc_controllers.api.v1alpha1.k8sschema import DATA_FILE, inline_schemas

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "src" / "arc_controllers" / "api" / "v1alpha1" / "data" / DATA_FILE


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def process(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def get(url: str, token: str | None, ctx: ssl.SSLContext | None = None) -> bytes:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    with urllib.request.urlopen(req, context=ctx, timeout=10) as resp:
        body: bytes = resp.read()
        return body


def wait_for(url: str, token: str | None, ctx: ssl.SSLContext | None, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{proc.args[0]} exited with {proc.returncode}; see {log}:\n{log.read_text()[-3000:]}")
        try:
            get(url, token, ctx)
            return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    sys.exit(f"{url} not ready after 60 s; see {log}")


def main() -> int:
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if not assets:
        sys.exit("set KUBEBUILDER_ASSETS to the folder holding kube-apiserver and etcd")
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="k8s-schemas-") as tmp:
        work = Path(tmp)
        key = ec.generate_private_key(ec.SECP256R1())
        (work / "sa.key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        (work / "sa.pub").write_bytes(
            key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
        (work / "tokens.csv").write_text(f'{token},admin,admin,"system:masters"\n')
        etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
        etcd_url = f"http://127.0.0.1:{etcd_port}"
        etcd_args = [
            f"{assets}/etcd",
            f"--data-dir={work / 'etcd'}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
            "--unsafe-no-fsync=true",
        ]
        api_args = [
            f"{assets}/kube-apiserver",
            f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1",
            f"--secure-port={api_port}",
            f"--cert-dir={work / 'certs'}",
            f"--token-auth-file={work / 'tokens.csv'}",
            f"--service-account-issuer=https://127.0.0.1:{api_port}/",
            f"--service-account-key-file={work / 'sa.pub'}",
            f"--service-account-signing-key-file={work / 'sa.key'}",
            "--service-cluster-ip-range=10.0.0.0/24",
            "--authorization-mode=RBAC",
            "--disable-admission-plugins=ServiceAccount",
        ]
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # the server's self-signed cert on loopback, for this one read
        base = f"https://127.0.0.1:{api_port}"
        with process(etcd_args, work / "etcd.log") as etcd:
            wait_for(f"{etcd_url}/health", None, None, etcd, work / "etcd.log")
            with process(api_args, work / "apiserver.log") as api:
                wait_for(f"{base}/readyz", token, insecure, api, work / "apiserver.log")
                version = json.loads(get(f"{base}/version", token, insecure))["gitVersion"]
                index = json.loads(get(f"{base}/openapi/v3", token, insecure))
                core_url = index["paths"]["api/v1"]["serverRelativeURL"]
                document: dict[str, Any] = json.loads(get(base + core_url, token, insecure))
    schemas = inline_schemas(document["components"]["schemas"])
    data = {"kubernetesVersion": version, "source": "/openapi/v3/api/v1 of kube-apiserver", "schemas": schemas}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size} bytes) from kube-apiserver {version}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
