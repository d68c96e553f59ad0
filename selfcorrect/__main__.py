"""`python -m selfcorrect` behaves exactly like the `selfcorrect` script."""

from selfcorrect.entry import main

if __name__ == "__main__":
    main()
