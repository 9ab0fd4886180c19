"""Read CustomResourceDefinitions from files, install them, and wait until they are served.

Ports: sigs.k8s.io/controller-runtime/pkg/envtest/crd.go
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import structlog
import yaml

from reconcilekit.envtest._http import ApiSession, HarnessConnectionError
from reconcilekit.errors import AlreadyExistsError, ConflictError, NotFoundError, TooManyRequestsError

__all__ = ["CRD_EXTENSIONS", "CRDInstallError", "install_crds", "read_crds", "uninstall_crds"]

CRD_EXTENSIONS = (".json", ".yaml", ".yml")
"""File endings read from a CRD folder, as upstream."""

_CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
_CONFLICT_RETRIES = 5
_log = structlog.get_logger(__name__)

# libyaml's loader is ~10x faster on ARC's 1 MB CRDs; PyYAML wheels ship it.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

CRD = dict[str, Any]


class CRDInstallError(RuntimeError):
    """A CRD file could not be read, or a CRD was not served in time.

    Python only: upstream returns wrapped errors.
    """


def _files(path: Path, *, error_if_missing: bool) -> list[Path]:
    if not path.exists():
        if error_if_missing:
            raise CRDInstallError(f"CRD path {path} does not exist")
        _log.warning("CRD path does not exist, skipping it", path=str(path))
        return []
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.suffix in CRD_EXTENSIONS)
    return [path]


def _is_crd(doc: object) -> bool:
    if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
        return False
    spec = doc.get("spec")
    return isinstance(spec, dict) and bool(spec.get("group")) and bool((spec.get("names") or {}).get("kind"))


def read_crds(paths: Iterable[Path], *, error_if_path_missing: bool = False) -> list[CRD]:
    """Read every CRD from ``paths`` (blocking: file reads and YAML parsing).

    Args:
        paths: Files, or folders read non-recursively (``.json``, ``.yaml``, ``.yml``).
            Each file may hold several YAML documents.
        error_if_path_missing: Raise for a path that does not exist instead of
            logging and skipping it.

    Returns:
        The CRDs in file order. Documents of other kinds, or without
        ``spec.group`` or ``spec.names.kind``, are skipped. When two documents
        name the same CRD, the last one wins (and a line is logged).

    Raises:
        CRDInstallError: a missing path (see above), unparsable YAML, or a CRD
            that is not ``apiextensions.k8s.io/v1``.

    Ports: envtest.ReadCRDFiles and renderCRDs
    """
    by_name: dict[str, CRD] = {}
    for path in paths:
        for file in _files(Path(path), error_if_missing=error_if_path_missing):
            try:
                docs = list(yaml.load_all(file.read_text(), Loader=_Loader))
            except yaml.YAMLError as err:
                raise CRDInstallError(f"cannot parse {file}: {err}") from err
            for doc in docs:
                if not _is_crd(doc):
                    continue
                if doc.get("apiVersion") != "apiextensions.k8s.io/v1":
                    raise CRDInstallError(
                        f"{file}: {doc.get('apiVersion')} CRDs are not served; use apiextensions.k8s.io/v1"
                    )
                name = str((doc.get("metadata") or {}).get("name", ""))
                if name in by_name:
                    _log.info("CRD defined twice, the last definition wins", crd=name, file=str(file))
                    del by_name[name]
                by_name[name] = doc
    return list(by_name.values())


async def _create_or_update(session: ApiSession, crd: CRD) -> None:
    """Create the CRD, or replace the live one keeping its resourceVersion; retry on conflict.

    Ports: envtest.CreateCRDs (create, or update inside RetryOnConflict)
    """
    name = crd["metadata"]["name"]
    for attempt in range(_CONFLICT_RETRIES):
        try:
            try:
                live = await session.request("GET", f"{_CRD_PATH}/{name}")
            except NotFoundError:
                await session.request("POST", _CRD_PATH, body=crd)
                return
            desired = json.loads(json.dumps(crd))
            desired["metadata"]["resourceVersion"] = live["metadata"]["resourceVersion"]
            await session.request("PUT", f"{_CRD_PATH}/{name}", body=desired)
            return
        except (ConflictError, AlreadyExistsError):
            if attempt == _CONFLICT_RETRIES - 1:
                raise
            await asyncio.sleep(0.01 * 5**attempt)


def _conditions_true(live: CRD) -> bool:
    conditions = {c.get("type"): c.get("status") for c in (live.get("status") or {}).get("conditions") or []}
    return conditions.get("Established") == "True" and conditions.get("NamesAccepted") == "True"


async def _served(session: ApiSession, crd: CRD) -> bool:
    """Whether the CRD is Established with names accepted and its resource is served in every served version.

    Served means discovery lists the plural (upstream's check) and a LIST of it
    answers 200.

    Ports: envtest.WaitForCRDs (discovery)
    Differs: also waits for the Established and NamesAccepted conditions and for
    a successful LIST, which upstream does not
    """
    try:
        live = await session.request("GET", f"{_CRD_PATH}/{crd['metadata']['name']}")
        if not _conditions_true(live):
            return False
        spec = crd["spec"]
        for version in (v for v in spec.get("versions") or [] if v.get("served")):
            try:
                listing = await session.request("GET", f"/apis/{spec['group']}/{version['name']}")
            except NotFoundError:
                return False
            if not any(r.get("name") == spec["names"]["plural"] for r in listing.get("resources") or []):
                return False
            # Discovery lists the plural before the resource's watch cache is up; until then a
            # LIST answers 429 "storage is (re)initializing", which tests would trip over.
            await session.request(
                "GET", f"/apis/{spec['group']}/{version['name']}/{spec['names']['plural']}", params={"limit": "1"}
            )
    except (HarnessConnectionError, TooManyRequestsError, NotFoundError):
        return False
    return True


async def install_crds(
    session: ApiSession, crds: Sequence[CRD], *, max_time: float = 30.0, poll_interval: float = 0.1
) -> None:
    """Create or update ``crds``, then wait until every one of them is served.

    Args:
        session: An admin session.
        crds: CRDs as read by `read_crds`.
        max_time: Seconds to wait for all of them to be served (upstream: 10).
        poll_interval: Seconds between two checks.

    Raises:
        CRDInstallError: some CRD was not served within ``max_time`` (names them).
        APIStatusError: the server refused a CRD (e.g. `InvalidError`).

    Ports: envtest.InstallCRDs
    """
    for crd in crds:
        await _create_or_update(session, crd)
    pending = list(crds)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_time
    while pending:
        pending = [crd for crd in pending if not await _served(session, crd)]
        if not pending:
            break
        if loop.time() >= deadline:
            names = ", ".join(c["metadata"]["name"] for c in pending)
            raise CRDInstallError(f"CRDs not served after {max_time:g} s: {names}")
        await asyncio.sleep(poll_interval)
    if crds:
        _log.debug("installed CRDs", crds=[c["metadata"]["name"] for c in crds])


async def uninstall_crds(session: ApiSession, crds: Sequence[CRD]) -> None:
    """Delete ``crds``; ones already gone are ignored.

    Ports: envtest.UninstallCRDs
    """
    for crd in crds:
        try:
            await session.request("DELETE", f"{_CRD_PATH}/{crd['metadata']['name']}")
        except NotFoundError:
            continue
