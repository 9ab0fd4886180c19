"""reconcilekit's own Prometheus registry: every metric of the library is registered here.

Like controller-runtime, reconcilekit keeps its metrics off prometheus_client's
global default registry, so an operator that embeds it decides what to serve.
The manager's metrics server serves `REGISTRY`; add your own collectors to it
to have them served too.

Ports: sigs.k8s.io/controller-runtime/pkg/metrics (registry.go)
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry

__all__ = ["REGISTRY"]

REGISTRY = CollectorRegistry(auto_describe=True)
"""The registry every reconcilekit metric is registered on. Ports: metrics.Registry"""
