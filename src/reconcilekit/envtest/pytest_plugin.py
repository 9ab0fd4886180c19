"""pytest fixtures: a session-scoped control plane and a fresh namespace per test.

Python only: the pytest face of `reconcilekit.envtest`.
"""
