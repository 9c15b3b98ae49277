"""``python -m logmine.patch``: the sandbox's ``apply_patch`` command."""

from logmine.patch import main

raise SystemExit(main())
