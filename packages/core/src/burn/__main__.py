"""``python -m burn info``: the same as the ``burn`` console script."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
