"""The pieces of arc-sim: scenario, simulated kubelet and runners, progress, summary and plot."""
