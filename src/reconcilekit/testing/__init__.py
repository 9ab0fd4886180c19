"""Test doubles and fault injection for controllers built on reconcilekit.

Python only: controller-runtime ships a fake client; the fault kit is ours.
"""

from reconcilekit.testing.eventually import consistently, eventually
from reconcilekit.testing.fake_client import DEFAULT_KINDS_WITHOUT_STATUS, FakeClient, RecordedRequest

__all__ = ["DEFAULT_KINDS_WITHOUT_STATUS", "FakeClient", "RecordedRequest", "consistently", "eventually"]
