"""``python -m exactspec.cli``: the command line, as ``exactspec`` and ``python -m exactspec``."""

import sys

from . import main

sys.exit(main())
