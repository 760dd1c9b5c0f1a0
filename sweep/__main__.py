"""``python -m sweep``: the sweep command line."""

from .cli import main

raise SystemExit(main())
