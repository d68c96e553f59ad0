"""`python -m selfcorrect` behaves exactly like the `selfcorrect` script."""

from selfcorrect.cli.main import entry

if __name__ == "__main__":
    entry()
