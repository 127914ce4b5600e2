"""``python -m replay.cli``: the ``evictlens`` command."""

import sys

from replay.cli import main

if __name__ == "__main__":
    sys.exit(main())
