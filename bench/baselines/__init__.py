"""Baselines jobdoctor's speed is measured against (each one runs as its own process)."""
