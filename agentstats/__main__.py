"""``python -m agentstats``: the command line (same as the ``agentstats`` command)."""

from agentstats.cli import main

if __name__ == "__main__":
    main()
