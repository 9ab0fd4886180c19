"""The ``arc-listener`` console script: the listener process as lean as its work allows.

A listener runs per scale set, so its memory counts twenty times over in a cluster
with twenty scale sets (issue 20: 65.5 MiB against Go's 26). Most of it is imports.
The process imports only what its configuration needs: cryptography and PyJWT for
a GitHub App key (`arc_controllers.actions.auth`), prometheus_client and aiohttp's
server when metrics are served (`arc_controllers.listener.metrics`), and never rich:
structlog's package imports ``structlog.dev``, which imports rich (and pygments)
whenever they are installed, as they are in a development environment through its
tools; the controller image has neither. The listener renders its own slog records
and needs neither.

Python only: Go's binary has no import cost.

Ports: none; Python only (the import diet of cmd/ghalistener/main.go's process, issue 20).
"""

from __future__ import annotations

import sys

__all__ = ["DEVELOPER_ONLY_PACKAGES", "keep_developer_packages_out", "main"]

DEVELOPER_ONLY_PACKAGES = ("rich",)
"""Packages structlog imports when installed and the listener never uses (≈ 5 MiB with pygments)."""


def keep_developer_packages_out() -> None:
    """Make `DEVELOPER_ONLY_PACKAGES` look uninstalled to this process, unless already imported.

    Call before anything imports structlog; structlog then behaves as in the controller image,
    where they are not installed.
    """
    for name in DEVELOPER_ONLY_PACKAGES:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None: "import fails", by design


def main() -> int:
    """Run the listener process (`arc_controllers.listener.__main__.main`) without the developer packages.

    Python only: see the module docstring.
    """
    keep_developer_packages_out()
    from arc_controllers.listener.__main__ import main as run_listener

    return run_listener()


if __name__ == "__main__":
    sys.exit(main())
