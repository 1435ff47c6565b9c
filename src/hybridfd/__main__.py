"""``python -m hybridfd`` is the ``hybridfd`` command (see :mod:`hybridfd.cli`)."""

from hybridfd.cli import main

raise SystemExit(main())
