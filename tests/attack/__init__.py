"""Difference-attack harness for published release versions (see tests/attack/harness.py)."""
