"""Sources of a controller's events: a kind in the shared cache, an informer, a channel, a function.

Ports: sigs.k8s.io/controller-runtime/pkg/source
"""

from reconcilekit.source.source import Source, SyncingSource, channel, func, informer, kind

__all__ = ["Source", "SyncingSource", "channel", "func", "informer", "kind"]
