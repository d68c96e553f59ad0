"""The loop simulator: drives selfcorrect's closed loop as users do (docs/simulator.md)."""
