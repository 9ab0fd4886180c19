"""The pytest plugin: loaded in every run, so cheap to import; skips envtest_only tests on an existing cluster."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

HEAVY = ("aiohttp", "cryptography", "kubernetes_asyncio", "yaml", "reconcilekit.envtest._environment")


def test_importing_the_plugin_loads_nothing_heavy() -> None:
    """Importing reconcilekit.envtest and its plugin imports neither aiohttp, cryptography nor the harness."""
    code = (
        "import sys, reconcilekit.envtest, reconcilekit.envtest.pytest_plugin\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_public_names_resolve_lazily() -> None:
    """Every name in reconcilekit.envtest.__all__ resolves on first use."""
    import reconcilekit.envtest as envtest

    for name in envtest.__all__:
        assert getattr(envtest, name) is not None


def test_envtest_only_tests_are_skipped_on_an_existing_cluster(tmp_path: Path) -> None:
    """With USE_EXISTING_CLUSTER=true an envtest_only test is skipped and the others run; nothing starts."""
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (tmp_path / "test_sample.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.envtest_only
            def test_bare_control_plane():
                raise AssertionError("must be skipped")

            def test_anywhere():
                pass
            """
        )
    )
    env = {**os.environ, "USE_EXISTING_CLUSTER": "TRUE"}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed, 1 skipped" in out.stdout
    assert "USE_EXISTING_CLUSTER=true" in out.stdout
