"""ARC's Kubernetes API types (group ``actions.github.com``)."""
