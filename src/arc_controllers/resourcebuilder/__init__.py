"""Resource builder."""
