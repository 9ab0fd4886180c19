"""The version gate: may this controller build manage an object labelled with a chart version?

Ports: apis/actions.github.com/v1alpha1/version.go
"""

from __future__ import annotations

__all__ = ["is_version_allowed"]


def _leading_int(text: str) -> tuple[str, str] | None:
    """Split off a leading decimal number without a leading zero (``"0"`` itself is fine)."""
    end = 0
    while end < len(text) and "0" <= text[end] <= "9":
        end += 1
    if end == 0 or (text[0] == "0" and end != 1):
        return None
    return text[:end], text[end:]


def _major_minor(version: str) -> tuple[str, str] | None:
    """``major[.minor[.patch]]`` -> (major, minor or "0"); None for anything else (no ``v``, no suffix)."""
    head = _leading_int(version)
    if head is None:
        return None
    major, rest = head
    if not rest:
        return major, "0"
    if rest[0] != ".":
        return None
    head = _leading_int(rest[1:])
    if head is None:
        return None
    minor, rest = head
    if not rest:
        return major, minor
    if rest[0] != ".":
        return None
    patch = _leading_int(rest[1:])
    if patch is None or patch[1]:
        return None
    return major, minor


def is_version_allowed(resource_version: str, build_version: str) -> bool:
    """True when a controller built as ``build_version`` may manage an object labelled ``resource_version``.

    Allowed: a ``dev`` build, equal strings, a ``canary-*`` build, or both parse as
    ``major[.minor[.patch]]`` with equal major and minor. Anything unparseable is refused.

    Args:
        resource_version: The object's ``app.kubernetes.io/version`` label ("" when absent).
        build_version: This controller's build version.

    Ports: IsVersionAllowed
    """
    if build_version == "dev" or resource_version == build_version or build_version.startswith("canary-"):
        return True
    resource, build = _major_minor(resource_version), _major_minor(build_version)
    return resource is not None and build is not None and resource == build
