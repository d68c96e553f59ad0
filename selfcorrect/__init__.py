"""selfcorrect: the deterministic half of a validator/self-correct pair."""

__version__ = "0.1.0.dev0"
