"""Faults on demand: the rules (rules.py) and where a cluster places them (placement.py)."""
