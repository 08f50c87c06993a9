"""`python -m remat_harness`: the same as `remat-harness`."""

import sys

from remat_harness.cli import main

sys.exit(main())
