"""Measured comparisons, printed as ratios against a baseline measured in the same run."""
