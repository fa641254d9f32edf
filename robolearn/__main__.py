"""``python -m robolearn`` runs the command line (as torchrun's ``-m robolearn`` does)."""

import sys

from robolearn.cli import main

sys.exit(main())
