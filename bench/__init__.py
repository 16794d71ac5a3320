"""Benchmarks: AWS calls, speed and scale of the runtime against the obvious baselines.

Run with ``python -m bench [--quick | --plan full|quick|smoke]`` (``make bench``); see
docs/bench.md. Not part of ``make test``: tests/unit/test_bench_harness.py and
tests/integration/test_bench_*.py prove the harness counts and the baselines are correct
(the latter runs the smoke plan).
"""
