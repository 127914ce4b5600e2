"""``python -m replay.cli``: the ``evictlens`` command."""

import sys

from replay.cli import main

sys.exit(main())
