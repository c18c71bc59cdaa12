"""0xx: findings about the bash script itself (emitted by the shell front end)."""

from ..engine import REGISTRY, Rule
from ..model import Severity

REGISTRY.register(
    Rule(
        "VL001",
        "bash-parse-error",
        Severity.ERROR,
        """The script is not valid bash.

        ## What it does
        Reports text that tree-sitter-bash cannot parse (an unclosed quote, a stray `fi`).
        The rest of the file is still analysed.

        ## Why is this bad?
        bash stops at the syntax error, so the launch after it never runs, or runs with
        a different command line than the one you read.

        ## Use instead
        Fix the syntax; `bash -n script.sh` shows what bash thinks.
        """,
        None,
        bad=['#!/bin/bash\nif [ -z "$X" ]; then\n  echo "unterminated\n'],
        good=["#!/bin/bash\necho ok\n"],
    )
)

REGISTRY.register(
    Rule(
        "VL002",
        "variable-used-before-assignment",
        Severity.WARNING,
        """A variable is used before the line that assigns it.

        ## What it does
        Flags `$VAR` (or `VAR` inside `$(( ))`) read above the script's own assignment of `VAR`.

        ## Why is this bad?
        bash expands it to an empty string (0 in arithmetic), so
        `$(( max_len / sp_size ))` with `sp_size` set further down is a division by
        zero or a silently wrong size. Real verl example scripts contain this bug.

        ## Use instead
        Assign the variable before it is used.
        """,
        None,
        bad=["#!/bin/bash\nmax_len=$(( 4096 / sp_size ))\nsp_size=4\n"],
        good=["#!/bin/bash\nsp_size=4\nmax_len=$(( 4096 / sp_size ))\n"],
    )
)

REGISTRY.register(
    Rule(
        "VL003",
        "unused-suppression",
        Severity.INFO,
        """A `# verl-lint: disable=...` comment that suppresses nothing.

        ## What it does
        Reports each code in a suppression comment that matched no finding on its line
        (or the next line, for a comment on its own line, or the file, for `disable-file`).

        ## Why is this bad?
        Stale suppressions rot: they hide the next real finding on that line.

        ## Use instead
        Remove the code from the comment.
        """,
        None,
        bad=["#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodes=1  # verl-lint: disable=VL101\n"],
        good=["#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodez=1  # verl-lint: disable=VL101\n"],
    )
)
