"""Benchmarks: scripts that print figures, with baselines measured in the same run."""
