"""`python -m verl_lint ...`: the `verl-lint` command."""

import sys

from .cli import main

sys.exit(main())
