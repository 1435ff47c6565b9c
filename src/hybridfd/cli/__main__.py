"""``python -m hybridfd.cli`` is the ``hybridfd`` command."""

from hybridfd.cli import main

raise SystemExit(main())
