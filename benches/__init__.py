"""Benchmarks: each prints one JSON line. Run from the repository root as `python -m benches.NAME`."""
