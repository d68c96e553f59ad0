"""selfcorrect's own benchmark of the SPEC §18 performance targets (`python -m bench`)."""
