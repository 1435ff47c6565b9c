"""``python -m hybridfd.tune``: see :mod:`hybridfd.tune.command`."""

import sys

from hybridfd.tune.command import main

sys.exit(main())
