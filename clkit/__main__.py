"""``python -m clkit``: the same as the ``clkit`` command."""

import sys

from .cli import main

sys.exit(main())
