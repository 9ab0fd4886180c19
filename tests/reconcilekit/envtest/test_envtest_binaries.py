"""Where the envtest harness looks for kube-apiserver and etcd, and what it says when they are missing."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from reconcilekit.envtest import BinaryNotFoundError, Environment, default_assets_directory, find_binary
from reconcilekit.envtest._binaries import locate_binary


def _executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    """One kube-apiserver in each place the lookup knows."""
    return {
        "test_asset": _executable(tmp_path / "explicit" / "my-apiserver"),
        "assets": _executable(tmp_path / "assets" / "kube-apiserver"),
        "option": _executable(tmp_path / "option" / "kube-apiserver"),
        "cache": _executable(
            tmp_path / "cache" / "reconcilekit" / "envtest" / "k8s-v1.36.3-etcd-v3.6.16" / "kube-apiserver"
        ),
    }


def test_test_asset_variable_wins(places: dict[str, Path], tmp_path: Path) -> None:
    """TEST_ASSET_KUBE_APISERVER beats KUBEBUILDER_ASSETS, the option and the cache."""
    env = {
        "TEST_ASSET_KUBE_APISERVER": str(places["test_asset"]),
        "KUBEBUILDER_ASSETS": str(places["assets"].parent),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    assert (
        find_binary("kube-apiserver", binary_assets_directory=places["option"].parent, environ=env)
        == places["test_asset"]
    )


def test_kubebuilder_assets_beats_option_and_cache(places: dict[str, Path], tmp_path: Path) -> None:
    """Without TEST_ASSET_*, $KUBEBUILDER_ASSETS/<name> is used."""
    env = {"KUBEBUILDER_ASSETS": str(places["assets"].parent), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    found = find_binary("kube-apiserver", binary_assets_directory=places["option"].parent, environ=env)
    assert found == places["assets"]


def test_option_beats_cache(places: dict[str, Path], tmp_path: Path) -> None:
    """Without environment variables, binary_assets_directory is used before the build cache."""
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    found = find_binary("kube-apiserver", binary_assets_directory=places["option"].parent, environ=env)
    assert found == places["option"]


def test_default_is_the_build_cache(places: dict[str, Path], tmp_path: Path) -> None:
    """With nothing set, the folder hack/envtest-assets.sh builds into is used."""
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert find_binary("kube-apiserver", environ=env) == places["cache"]
    assert locate_binary("kube-apiserver", environ=env).source == "default cache"


def test_default_cache_follows_the_build_scripts_variables(tmp_path: Path) -> None:
    """ENVTEST_ASSETS_CACHE and the version variables move the default folder, as in the script."""
    env = {"ENVTEST_ASSETS_CACHE": str(tmp_path), "ENVTEST_K8S_VERSION": "v1.35.4", "ENVTEST_ETCD_VERSION": "v3.6.13"}
    assert default_assets_directory(env) == tmp_path / "k8s-v1.35.4-etcd-v3.6.13"
    assert default_assets_directory({"HOME": "/home/u"}) == Path(
        "/home/u/.cache/reconcilekit/envtest/k8s-v1.36.3-etcd-v3.6.16"
    )


def test_a_set_place_without_the_binary_is_an_error_not_a_fallback(places: dict[str, Path], tmp_path: Path) -> None:
    """KUBEBUILDER_ASSETS naming an empty folder fails (as upstream), even though the cache has the binary."""
    env = {"KUBEBUILDER_ASSETS": str(tmp_path / "empty"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    with pytest.raises(BinaryNotFoundError, match=r"KUBEBUILDER_ASSETS.*bash hack/envtest-assets\.sh"):
        find_binary("kube-apiserver", environ=env)


def test_not_executable_is_an_error(tmp_path: Path) -> None:
    """A file without the execute bit is reported as such."""
    plain = tmp_path / "etcd"
    plain.write_text("")
    with pytest.raises(BinaryNotFoundError, match="not executable"):
        find_binary("etcd", environ={"TEST_ASSET_ETCD": str(plain)})


def test_empty_variables_count_as_unset(places: dict[str, Path], tmp_path: Path) -> None:
    """An empty TEST_ASSET_* or KUBEBUILDER_ASSETS does not point at the current folder."""
    env = {"TEST_ASSET_KUBE_APISERVER": "", "KUBEBUILDER_ASSETS": "", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    assert find_binary("kube-apiserver", environ=env) == places["cache"]


async def test_environment_start_without_binaries_says_how_to_build_them(tmp_path: Path) -> None:
    """Environment.start fails with the build hint and leaves nothing started."""
    env = Environment(environ={"KUBEBUILDER_ASSETS": str(tmp_path)})
    with pytest.raises(BinaryNotFoundError, match=r"bash hack/envtest-assets\.sh"):
        await env.start()
    assert env.etcd_pid is None
    await env.stop()
