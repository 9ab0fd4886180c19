"""Entry points: the controller manager (arc-controller, `cmd.manager`) and the simulation (arc-sim, `cmd.sim`)."""
