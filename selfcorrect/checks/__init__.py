"""Deterministic checks: the built-in validator's and the evidence re-check (rules §2.2, §14)."""
