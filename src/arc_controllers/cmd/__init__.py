"""Entry points: the controller manager (arc-controller) and the simulation (arc-sim)."""
