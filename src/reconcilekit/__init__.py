"""reconcilekit: controller-runtime's design for asyncio on kubernetes-asyncio.

Packages mirror controller-runtime's: `client`, `cache`, `workqueue`, `controller`,
`handler`, `predicate`, `manager`, `leaderelection`, `controllerutil`, `retry`,
`envtest`, `metrics`, and `testing` for fault injection.
"""

__version__ = "0.1.0"
