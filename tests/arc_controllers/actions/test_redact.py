"""redact: every shape it scrubs, with and without the one-scan fast path's hints."""

from __future__ import annotations

import pytest

from arc_controllers.actions.redact import REDACTED, SecretSet, redact

JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"
NOT_FOUND = '404 NotFound: secrets "no-such-config-secret" not found'
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"token {JWT} end", f"token {REDACTED} end"),
        (f"key {PEM} end", f"key {REDACTED} end"),
        ("header: Bearer ghs_0123456789abcdef", f"header: Bearer {REDACTED}"),
        ("header: bearer ghs_0123456789abcdef", f"header: bearer {REDACTED}"),
        ("header: REMOTEAUTH\tabcdefgh12345678", f"header: REMOTEAUTH {REDACTED}"),
        ("-----BEGIN CERTIFICATE----- cut short", REDACTED),
        (NOT_FOUND, NOT_FOUND),
        ("a Bearer of bad news", "a Bearer of bad news"),  # too short to be a token
    ],
)
def test_each_shape_is_redacted_and_plain_text_is_unchanged(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_known_secrets_are_redacted_without_any_shape() -> None:
    assert SecretSet(["plain-secret-value"]).redact("got plain-secret-value here") == f"got {REDACTED} here"
    assert redact("got plain-secret-value", iter(["plain-secret-value"])) == f"got {REDACTED}"
