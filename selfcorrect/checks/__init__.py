"""Deterministic checks: the built-in validator's and the evidence re-check (SPEC §2.2, §14)."""
