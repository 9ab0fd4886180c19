"""arc_controllers: a port of actions-runner-controller's runner scale set mode on reconcilekit."""

__version__ = "0.1.0"
