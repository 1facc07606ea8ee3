"""`python -m app.cli`: the `tilescope` command."""

import sys

from .commands import main

sys.exit(main())
