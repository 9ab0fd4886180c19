"""arc-sim: the whole system on one machine (`main`) and its pieces (scenario, kubelet, progress, report)."""
