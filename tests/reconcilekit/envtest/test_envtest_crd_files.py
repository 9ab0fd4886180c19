"""Reading CRD files: folders non-recursive, multi-document YAML, only real v1 CRDs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from reconcilekit.envtest import CRDInstallError
from reconcilekit.envtest._crd import read_crds

TESTDATA = Path(__file__).parents[3] / "envtest" / "testdata" / "crds"


def _crd(
    name: str, *, group: str = "example.com", kind: str = "Thing", api_version: str = "apiextensions.k8s.io/v1"
) -> dict[str, object]:
    return {
        "apiVersion": api_version,
        "kind": "CustomResourceDefinition",
        "metadata": {"name": name},
        "spec": {"group": group, "names": {"kind": kind, "plural": name.split(".")[0]}, "versions": []},
    }


def _write(path: Path, *docs: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_reads_the_shipped_test_crd_and_skips_other_kinds() -> None:
    """The testdata file holds a CRD and a ConfigMap; only the CRD is returned."""
    crds = read_crds([TESTDATA])
    assert [c["metadata"]["name"] for c in crds] == ["widgets.testing.reconcilekit.dev"]


def test_folder_is_read_non_recursively_with_known_extensions(tmp_path: Path) -> None:
    """Files ending .yaml, .yml and .json are read; subfolders and other endings are not."""
    _write(tmp_path / "a.yaml", _crd("as.example.com"))
    _write(tmp_path / "b.yml", _crd("bs.example.com"))
    (tmp_path / "c.json").write_text(
        '{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",'
        ' "metadata": {"name": "cs.example.com"},'
        ' "spec": {"group": "example.com", "names": {"kind": "C"}}}'
    )
    _write(tmp_path / "notes.txt", _crd("ignored.example.com"))
    _write(tmp_path / "nested" / "d.yaml", _crd("ds.example.com"))
    names = [c["metadata"]["name"] for c in read_crds([tmp_path])]
    assert names == ["as.example.com", "bs.example.com", "cs.example.com"]


def test_multi_document_files_and_incomplete_crds(tmp_path: Path) -> None:
    """Every CRD document of a file is read; ones without group or kind, and empty documents, are skipped."""
    path = _write(
        tmp_path / "all.yaml",
        _crd("xs.example.com"),
        None,
        _crd("ys.example.com", group=""),
        _crd("zs.example.com", kind=""),
        _crd("ws.example.com"),
    )
    assert [c["metadata"]["name"] for c in read_crds([path])] == ["xs.example.com", "ws.example.com"]


def test_last_definition_of_a_name_wins(tmp_path: Path) -> None:
    """Two documents with one name give one CRD: the later one."""
    first, second = _crd("xs.example.com", kind="Old"), _crd("xs.example.com", kind="New")
    crds = read_crds([_write(tmp_path / "1.yaml", first), _write(tmp_path / "2.yaml", second)])
    assert [c["spec"]["names"]["kind"] for c in crds] == ["New"]


def test_missing_path_is_skipped_unless_asked_to_fail(tmp_path: Path) -> None:
    """A missing path is skipped by default and an error with error_if_path_missing."""
    assert read_crds([tmp_path / "nope"]) == []
    with pytest.raises(CRDInstallError, match="does not exist"):
        read_crds([tmp_path / "nope"], error_if_path_missing=True)


def test_bad_yaml_and_old_api_versions_are_errors(tmp_path: Path) -> None:
    """Unparsable YAML names its file; a v1beta1 CRD is refused with the version to use."""
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [unclosed\n")
    with pytest.raises(CRDInstallError, match=r"broken\.yaml"):
        read_crds([broken])
    old = _write(tmp_path / "old.yaml", _crd("os.example.com", api_version="apiextensions.k8s.io/v1beta1"))
    with pytest.raises(CRDInstallError, match=r"use apiextensions\.k8s\.io/v1"):
        read_crds([old])
