"""selfcorrect's own benchmark of the rules §18 performance targets (`python -m bench`)."""
