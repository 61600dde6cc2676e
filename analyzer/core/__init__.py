"""Shared ground: the error classes, YAML loading, the build cache and the process pool.

Imports nothing else of jobdoctor: every stage may use it."""
