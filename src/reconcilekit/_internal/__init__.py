"""Helpers shared inside reconcilekit; not part of its public API."""
