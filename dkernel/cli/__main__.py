"""``python -m dkernel.cli``: the ``dkernel`` command."""

import sys

from . import main

sys.exit(main())
