"""Keeping tokens, JIT configs and private keys out of log lines, reprs and error messages.

Every error message the Actions client builds passes through `redact`, which
replaces each secret the client knows of (PAT, private key, installation,
registration, admin and message-queue tokens) and anything shaped like a JWT
or a PEM block with ``[redacted]``.

Python only: Go's client relies on never formatting secrets; here a second
line of defence scrubs whatever text might carry one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import structlog
import structlog.tracebacks

__all__ = ["MIN_SECRET_LENGTH", "REDACTED", "TRACEBACKS_WITHOUT_LOCALS", "SecretSet", "redact"]

REDACTED = "[redacted]"
"""What a secret is replaced with."""

MIN_SECRET_LENGTH = 8
"""Shorter values are never treated as secrets."""

TRACEBACKS_WITHOUT_LOCALS = structlog.processors.ExceptionRenderer(
    structlog.tracebacks.ExceptionDictTransformer(show_locals=False)
)
"""A structlog processor rendering ``exc_info`` as a dict of frames, without their locals.

structlog's ``dict_tracebacks`` shows every frame's locals: a request's headers, and so
its bearer token, would reach a JSON log past any key-based redaction. The manager's and
the listener's JSON logs use this instead.
"""

_JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*")
_PEM = re.compile(r"-----BEGIN [A-Z ]+-----.*?(-----END [A-Z ]+-----|$)", re.DOTALL)
_AUTH_VALUE = re.compile(r"(?i)\b(Bearer|RemoteAuth)\s+[A-Za-z0-9._~+/=-]{8,}")
_MAYBE_SHAPED = re.compile(r"eyJ|-----BEGIN [A-Z ]+-----|(?i:\b(?:Bearer|RemoteAuth)\s)")
"""Matches wherever `_JWT`, `_PEM` or `_AUTH_VALUE` could: text without a match needs no substitution.

One scan instead of three: the manager passes every string of every log line through `redact`.
"""


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Return ``text`` with every secret in ``secrets``, JWT, PEM block and auth value replaced.

    Args:
        text: Any text meant for a log line or an exception message.
        secrets: Exact secret values to remove; values shorter than
            `MIN_SECRET_LENGTH` are ignored (no real token is that short, and
            replacing a common word would garble the text). Longer values are
            replaced first, so a secret that contains another is removed whole.

    Python only: see the module docstring.
    """
    if secrets:
        for secret in sorted((s for s in secrets if len(s) >= MIN_SECRET_LENGTH), key=len, reverse=True):
            text = text.replace(secret, REDACTED)
    if _MAYBE_SHAPED.search(text) is None:
        return text
    text = _PEM.sub(REDACTED, text)
    text = _JWT.sub(REDACTED, text)
    return _AUTH_VALUE.sub(lambda m: f"{m.group(1)} {REDACTED}", text)


class SecretSet:
    """The secret values one client has seen, for `redact`.

    Python only: tokens arrive at run time (installation, registration, admin,
    queue tokens), so the set grows as the client learns them.
    """

    def __init__(self, initial: Iterable[str] = ()) -> None:
        self._values: set[str] = {s for s in initial if s}

    def add(self, *values: str | None) -> None:
        """Remember each non-empty value as a secret.

        Python only: see the class docstring.
        """
        self._values.update(v for v in values if v)

    def redact(self, text: str) -> str:
        """Return ``text`` with every known secret replaced; see `redact`.

        Python only: see the class docstring.
        """
        return redact(text, self._values)

    def __repr__(self) -> str:
        return f"SecretSet(<{len(self._values)} values>)"
