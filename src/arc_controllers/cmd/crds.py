"""Our CRDs for the cluster: ``arc-controller crds`` prints them, and start-up checks the served ones.

Helm installs a chart's CRDs on first install and never upgrades them, so after a
switch from Go ARC 0.14.x the API server may still serve Go ARC's CRDs. Before any
controller starts, `check_served_crds` reads the OpenAPI v3 document the API server
publishes for ``actions.github.com/v1alpha1`` (readable by every authenticated
identity; ARC's chart grants no rights on CRD objects) and stops the manager with one
line when a kind drops a field the controllers write or requires one they never write
(`arc_controllers.api.v1alpha1.crdcompat`).

Beyond: ARC #4638; its revision fields are pruned unseen by the older CRDs a chart upgrade leaves in place.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from arc_controllers.api.v1alpha1 import GROUP, KINDS, VERSION
from arc_controllers.api.v1alpha1.crdcompat import compare_served, served_schemas
from arc_controllers.api.v1alpha1.crdgen import generate, render
from arc_controllers.cmd.options import StartupError
from reconcilekit.client.openapi import new_openapi_v3_client
from reconcilekit.config import RestConfig
from reconcilekit.errors import APIStatusError, TransportError

__all__ = ["APPLY", "SKIP_FLAG", "check_served_crds", "crds_text", "install_command", "print_crds"]

APPLY = "kubectl apply --server-side --force-conflicts -f -"
"""How our CRDs go in: server-side (a client-side apply's last-applied annotation would
exceed the 256 KiB limit), taking the fields over from Helm's and Go ARC's field managers."""

SKIP_FLAG = "--skip-crd-check"
"""The flag that turns the start-up check off."""


def crds_text() -> str:
    """Our four CRDs as one YAML stream, byte for byte the files of ``config/crd``."""
    return "".join(render(generate(kind)) for kind in KINDS)


def print_crds(args: Sequence[str], out: TextIO | None = None) -> int:
    """``arc-controller crds``: write `crds_text` to stdout; return the exit status (2 for any argument)."""
    if args:
        print(f"arc-controller crds takes no arguments, got {' '.join(args)!r}", file=sys.stderr)
        return 2
    (out or sys.stdout).write(crds_text())
    return 0


def install_command(image: str = "") -> str:
    """The one command that installs our CRDs: from the controller image when it is known."""
    source = f"docker run --rm {image} crds" if image else "arc-controller crds"
    return f"{source} | {APPLY}"


async def check_served_crds(config: RestConfig, *, image: str = "") -> None:
    """Return when the served CRDs keep every field of ours; else raise with the one line to print.

    Args:
        config: the API server.
        image: the controller image (``CONTROLLER_MANAGER_CONTAINER_IMAGE``), named in the fix.

    Raises:
        StartupError: exit 1; the line names each kind, its fields, and the command that
            installs ours. Also when the document cannot be read.
    """
    group_version = f"apis/{GROUP}/{VERSION}"
    fix = f"install ours with: {install_command(image)} (or start with {SKIP_FLAG})"
    try:
        async with new_openapi_v3_client(config) as openapi:
            paths = await openapi.paths()
            if group_version not in paths:
                raise StartupError(f"CRD check: the API server serves no {GROUP}/{VERSION} kinds; {fix}", 1)
            document = await openapi.schema(group_version)
    except (APIStatusError, TransportError) as err:
        raise StartupError(f"CRD check: cannot read /openapi/v3/{group_version}: {err}; {fix}", 1) from err
    served = served_schemas(document)
    gaps = [gap for kind in KINDS if (gap := compare_served(kind, served.get(kind.GVK.kind))) is not None]  # type: ignore[attr-defined]
    if gaps:
        found = "; ".join(gap.describe() for gap in gaps)
        raise StartupError(f"CRD check: the installed CRDs are not ours: {found}; {fix}", 1)
