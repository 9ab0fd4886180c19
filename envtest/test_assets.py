"""The envtest binaries named by KUBEBUILDER_ASSETS exist and report their versions."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest


@pytest.mark.envtest_only
def test_assets_report_their_versions() -> None:
    """kube-apiserver and etcd built by hack/envtest-assets.sh answer --version."""
    assets = Path(os.environ["KUBEBUILDER_ASSETS"])
    apiserver = subprocess.run([assets / "kube-apiserver", "--version"], capture_output=True, text=True, check=True)
    etcd = subprocess.run([assets / "etcd", "--version"], capture_output=True, text=True, check=True)
    assert apiserver.stdout.startswith("Kubernetes v1.")
    assert "etcd Version: 3." in etcd.stdout
