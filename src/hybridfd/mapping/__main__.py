"""``python -m hybridfd.mapping``: see :mod:`hybridfd.mapping.cli`."""

import sys

from hybridfd.mapping.cli import main

sys.exit(main())
