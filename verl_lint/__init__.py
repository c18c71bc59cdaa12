import os
import sys

__version__ = "0.1.0"

# `python -m verl_lint...` puts the working directory first on sys.path (unless -P), where a
# scanned repository's `yaml.py` or `hydra_plugins/` would be imported in place of the real
# ones. verl-lint needs nothing from there: drop it, as -P does. sys.argv[0] is "-m" only
# while Python finds the module named by -m, so a library import (the Hydra callback) is
# never affected.
if sys.argv[:1] == ["-m"] and not getattr(sys.flags, "safe_path", False) and sys.path:
    if os.path.realpath(sys.path[0] or os.curdir) == os.path.realpath(os.curdir):
        del sys.path[0]
