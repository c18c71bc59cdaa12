"""The catalogue of the rules the front ends report, below the stages that report them.

The shell reader (VL001, VL002, VL008), the runner and its limits (VL004-VL006), launch
recognition and location (VL007, VL009), the engine-version notes (VL010), the rules an entry
point does not run (VL012, `rules.pack`), the unassigned variables found from the launches and
the overrides zsh globs (VL011, VL013, `rules.script`), suppressions (VL003) and Hydra's
composition (VL101-VL106, `config.compose`) report findings that no rule check computes. Each is
declared here through `registry.declare`, with its documentation and examples like any rule;
a stage imports the `Rule` and calls `RULE.finding(...)`. Nothing here imports a stage or the
rule pack, so shell/, launch/ and config/ report without depending on rules/.
"""

from .model import Diagnostic
from .registry import REGISTRY, declare

# Codes of rules that are gone, and what reports their findings now: a `select`/`ignore` setting
# written for an older verl-lint that names one still loads (it matches no rule). A retired code
# is never given to a new rule (tests/test_rule_manifest.py).
RETIRED = {
    "VL201": "VL701-VL706",
    "VL202": "VL701-VL706",  # vLLM's enable_expert_parallel: read from verl's engine-argument assembly
    "VL219": "VL233",
    "VL220": "VL233",  # KL settings without their switch: derived from the code's conditions
}


def outcome(d: Diagnostic) -> str:
    """What `d` says about the analysis (`Rule.outcome`): only rules declared here have one, so a
    process that renders cached findings without the rule pack loaded still knows it."""
    r = REGISTRY.get(d.code)
    return r.outcome if r is not None else ""


# --------------------------------------------------------- 0xx: the script ----

BASH_PARSE_ERROR = declare(
    "VL001",
    "bash-parse-error",
    "error",
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
    snippets=False,
)

VARIABLE_USED_BEFORE_ASSIGNMENT = declare(
    "VL002",
    "variable-used-before-assignment",
    "warning",
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
    snippets=False,
)

UNUSED_SUPPRESSION = declare(
    "VL003",
    "unused-suppression",
    "info",
    """A `# verl-lint: disable=...` comment that suppresses nothing.

        ## What it does
        Reports each code in a suppression comment that matched no finding on its line
        (or the next line, for a comment on its own line, or the file, for `disable-file`).

        ## Why is this bad?
        Stale suppressions rot: they hide the next real finding on that line.

        ## Use instead
        Remove the code from the comment.
        """,
)


FILE_TOO_LARGE = declare(
    "VL004",
    "file-too-large",
    "error",
    """The file is over the size limit and was not analysed.

    ## What it does
    Skips files larger than `--max-file-size` (default 4 MiB) with this finding, so one
    generated or binary-ish file cannot stall a CI job.

    ## Why is this bad?
    Launch scripts are small; a multi-megabyte `.sh` is usually generated output, and its
    launches were not checked.

    ## Use instead
    Exclude the file (`exclude` in `[tool.verl-lint]`) or raise `--max-file-size`.
    """,
    outcome="file",
)
ANALYSIS_TIMEOUT = declare(
    "VL005",
    "analysis-timeout",
    "error",
    """A launch (or a whole file) was not analysed: it reached a limit on the analysis.

    ## What it does
    Bounds the work on one script so that its findings depend on the script, not on how busy
    the machine is. The budget is counted in work: at most 1000 launch analyses per file (a
    command analysed once per branch value or loop iteration counts once per variant); the
    launches past it are reported here, the same ones on every run. The wall clock is only a
    safety net against a hang: `--timeout` seconds (default 20) for each launch and for the
    file's shell code, never for the file as a whole, and not counting the indexing of a verl
    tree (built once and cached, whichever launch comes first). A launch over it is reported here with
    every launch after it; the findings of the launches analysed before are kept (and not
    cached, so the next run tries again). When the file's shell code alone takes longer,
    nothing in it was analysed: one finding at its first line.

    ## Why is this bad?
    The launches reported were not checked: their overrides may still be wrong.

    ## Use instead
    Split the script; raise `--timeout` when one launch really needs longer.
    """,
    outcome="limit",
)
INVALID_UTF8 = declare(
    "VL006",
    "invalid-utf8",
    "warning",
    """The script is not valid UTF-8.

    ## What it does
    Decodes the file with replacement characters and reports the first invalid byte once.

    ## Why is this bad?
    Overrides containing the bad bytes reach Hydra garbled; usually a file saved in a
    legacy encoding or with stray binary data.

    ## Use instead
    Save the script as UTF-8.
    """,
    outcome="unparsed",
)

LAUNCH_NOT_ANALYSABLE = declare(
    "VL007",
    "launch-not-analysable",
    "info",
    """A launch of a verl entry point that verl-lint could not analyse, and why.

    ## What it does
    Every command that starts a verl entry point (`-m verl.…` / `-m recipe.…`, a `main_*.py`)
    is either analysed or reported here, never skipped in silence. Reported: a launch whose
    `--config-path`, `--config-name` or `--config-dir` comes from something the linter cannot
    know statically (`$(pwd)`, an unset variable), one with an argument before the entry point
    that is only known at run time (`python3 $FLAGS -m …`), one run from inside a string
    verl-lint does not read as a script (`su user -c "…"`; `bash -c`, `eval` and here-documents
    are read), and a `hydra.searchpath` entry that cannot be mapped to a directory without
    importing code (`structured://`, a `pkg://` package that is not found).

    ## Why is this bad?
    Nothing in that launch was checked: its overrides may still be wrong.

    ## Use instead
    Build the path from something static (the script's own location, a variable with a
    default such as `${CONFIG_DIR:-examples/config}`), or lint the command with the real
    value: `verl-lint check -- python3 -m ... --config-path /abs/dir ...`.
    """,
    outcome="launch",
)

ENTRY_POINT_NOT_FOUND = declare(
    "VL009",
    "entry-point-not-found",
    "error",
    """The launch runs a module the verl tree does not have.

    ## What it does
    Looks up `-m MODULE` in the verl tree being linted (a checkout, the installed package, a
    release, a copy vendored in the repository), by file, without importing anything, and
    reports a module that is not there, with the closest module of the same package.

    ## Why is this bad?
    Python stops with `ModuleNotFoundError` before Hydra or Ray start: usually a typo, or an
    entry point of another verl release. (An entry point a release removed on purpose is
    VL426, with its replacement.)

    ## Use instead
    The module the tree has (`verl.trainer.main_ppo`, ...), or lint against the verl you run
    with `--verl-root` / `--verl`.
    """,
)

BROKEN_LINE_CONTINUATION = declare(
    "VL008",
    "broken-line-continuation",
    "error",
    """Overrides that bash runs as a separate command because the launch was cut off above them.

    ## What it does
    Flags a command whose name is a Hydra override (`actor_rollout_ref.rollout.n=5 \\` on a
    line of its own) right below a launch, with only blank lines, comments and backslashes
    between them: the `\\` continuation that should join it to the launch is missing or
    broken. A command that only looks like one (`evalplus.codegen --model m`: no `=`), or one
    below something else than a launch (an assignment, `echo`), is not judged. A later finding
    about the cut launch says so: a key set below the cut never reaches it, and after a `\\ `
    the run stops before anything is checked.

    ## Why is this bad?
    A comment line inside a continued command, a blank line, or `\\ ` (a space after the
    backslash, or a `# comment` after it) ends the command there. The launch runs without
    every override below that point — silently — and bash then fails on the rest with
    "command not found" after the job has already started. After `\\ ` bash also passes the
    escaped space to the launch as one more argument, which Hydra cannot parse: the launch
    stops at once (`OverrideParseException`).

    ## Use instead
    Keep every line of the command ending in a bare `\\`; put comments in an array
    (`ARGS=( a=1  # why\n b=2 )`) instead.
    """,
)

ENGINE_VERSION_UNKNOWN = declare(
    "VL010",
    "engine-version-unknown",
    "info",
    """Rules that depend on the rollout engine's release stayed silent: no version is known.

    ## What it does
    Whether an exported `VLLM_*` variable crashes the server or an `engine_kwargs` key exists
    depends on the vLLM / SGLang / vllm-ascend release. verl-lint takes that release from
    evidence only: `--vllm` / `--sglang` / `--vllm-ascend` / `--torch-npu` (or `vllm = "0.8.5"`
    in `[tool.verl-lint]`), the installed package, or the requirement ranges the verl tree
    and the project around the script declare (setup.py, pyproject.toml, requirements*.txt,
    docker files, a wheel's METADATA). With none of them, a finding that holds on some
    releases and not on others is not reported; this line (once per run, per engine) names
    the rules that stayed silent and the flag that enables them. A finding that holds on
    every known release (a misspelt name no release has) is still reported.

    ## Why is this bad?
    Nothing was checked where the verdict depends on the release: the export or engine
    argument may crash the rollout server on the release you run.

    ## Use instead
    Pass the release you run, e.g. `verl-lint check run.sh --vllm 0.12.0`, or set
    `vllm = "0.12.0"` in `[tool.verl-lint]`; or lint where the engine is installed.
    """,
)

ZSH_GLOB = declare(
    "VL013",
    "override-globbed-by-zsh",
    "warning",
    """An override with an unquoted `*`, `?` or `[...]` where zsh runs it.

    ## What it does
    Flags an override written on a launch with a pattern character outside quotes
    (`trainer.logger=['console','wandb']`: the brackets are unquoted, only the names inside are)
    where zsh reads the line: in a code block of a doc (Markdown or reStructuredText), which
    readers paste into their own shell, zsh by default on macOS (a warning); in a script that
    zsh runs (`#!/bin/zsh`, `#!/usr/bin/env zsh`, a `.zsh` file: an error). A bash or sh script
    is not judged: bash passes a pattern that matches no file on as written. Words built from
    variables are not judged, nor words that are no `key=value` override (a file pattern such as
    `data/*.parquet` is meant to be expanded; a usage line's `[-h]` is no command).

    ## Why is this bad?
    zsh expands the word as a file name pattern before Python starts: with no file matching it
    stops the whole command with `zsh: no matches found: trainer.logger=[console,wandb]`; with
    one matching, the override is replaced by the file's name. verl fixed its own examples for
    this ("quickstart example can't work on zsh").

    ## Use instead
    Quote the whole override: `'trainer.logger=["console","wandb"]'`, or
    `trainer.logger='["console","wandb"]'`.
    """,
)

NEVER_ASSIGNED = declare(
    "VL011",
    "variable-never-assigned",
    "warning",
    """A variable that reaches a launch is assigned nowhere in the script.

    ## What it does
    Flags `$X` / `${X}` whose value reaches a launch (an argument, an override, the launch's
    environment, a `--config-path`) when the script never assigns X: no assignment, `export`,
    `declare`, `local`, `read`, `for X in`, `getopts`, `mapfile`, `printf -v`, `let`, `(( X = ))`,
    `${X:=...}`. It stays silent when the script `source`s a file verl-lint does not read, runs
    `eval` on a string it does not read or `export $(...)` (they may set X), when the expansion
    has a default, alternative or error (`${X:-d}`, `${X:=d}`, `${X:+a}`, `${X:?}`), and for
    the variables the shell, the OS and the clusters verl runs under set: `HOME`, `PATH`, `USER`,
    `SLURM_*`, `MASTER_ADDR`, `RANK`, `CUDA_VISIBLE_DEVICES`, ... (`ENVIRONMENT` in
    `verl_lint/rules/script.py`), and when the script shows it expects X unset somewhere
    (`${X:+-$X}`, `[ -z "$X" ]`). A name in upper case is by convention an environment variable
    the user exports (projects document `export BASE_MODEL=...` before `bash train.sh`): it is
    reported as info; a lower-case name is a shell variable of the script, and one it never
    assigns is almost always a typo or a leftover (`$pwd` for `$PWD`): a warning. A command
    whose name is such a `$X`, followed by Hydra overrides (`$COMMAND data.x=1 ...`), is a
    warning whatever the case: unless the environment sets X, bash runs the first override
    as the command.

    ## Why is this bad?
    The launch gets whatever the caller's environment holds: an empty string when nobody
    exported it (`trainer.n_gpus_per_node=` is a Hydra error, an empty path a crash after the
    job started), a stale value from another experiment otherwise. verl-lint cannot check the
    value either and treats it as unknown.

    ## Use instead
    Set it in the script, or give it a default: `${NGPUS:-8}` (or `${NGPUS:?set NGPUS}` to stop
    with a message when it is missing).
    """,
    snippets=False,
)

ENTRY_POINT_NOT_JUDGED = declare(
    "VL012",
    "rules-not-run-for-entry-point",
    "info",
    """Rules verified on `verl.trainer.main_ppo`'s code did not judge a launch of another verl app.

    ## What it does
    A rule runs for every launch whose composed config has the keys it reads, whatever the
    config is named (a project's `my_grpo.yaml` composing `ppo_trainer`, a copied and edited
    config, `ppo_megatron_trainer`). Some rules describe what one entry point's trainer and
    workers do with a key (the keys `verl.trainer.main_ppo` ignores or overwrites, the rollout
    names its worker accepts). verl's other entry points (the fully-async and one-step-off apps,
    a recipe's own `main`) run other code that may read those keys itself, so those rules do
    not judge their launches; this line says which rules did not, once per run, where the
    launch sets a key they judge. A project's own entry point is taken at its config's word:
    the rules run.

    ## Why is this bad?
    Nothing is wrong with the launch; a clean report for it does not mean those keys are used.

    ## Use instead
    Nothing to change. Check those keys against the app's own code, or launch through
    `verl.trainer.main_ppo` with `--config-name`.
    """,
)


# A Hydra override (`a.b=1`, `+a.b=1`, `~a.b`): no command name.
# A Hydra override of a dotted key (`a.b=1`, `+a.b=1`, `~a.b`): no command name. Without `=` only
# a deletion is one: `evalplus.codegen` is a command.
_KEY = r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_@\-]+)+"
# A pattern (`re.match(OVERRIDE_LIKE, word)`): compiled by `re` when a script is read, never at a Hydra job start.
OVERRIDE_LIKE = rf"^((\+\+|\+)?{_KEY}=|~{_KEY}(=|$))"


# ----------------------------------------------- 1xx: Hydra's composition ----

UNKNOWN_CONFIG_KEY = declare(
    "VL101",
    "unknown-config-key",
    "error",
    """An override sets a key that is not in the composed config.

    ## What it does
    Runs Hydra's own override application on the composed config and reports
    "Could not override 'key'" at the override, with the closest real key.

    ## Why is this bad?
    Hydra composes in struct mode: the job stops before training with
    `ConfigCompositionException`. Usually a typo or a key renamed between verl releases.

    ## Use instead
    The key the did-you-mean names, or `+key=value` when you really add a new key
    (for example a dataclass-only field such as `actor_rollout_ref.rollout.enable_sleep_mode`).
    """,
)
OVERRIDE_SYNTAX_ERROR = declare(
    "VL102",
    "override-syntax-error",
    "error",
    """Hydra cannot parse an override.

    ## What it does
    Parses every override with Hydra's own grammar and reports the lexer/parser error.

    ## Why is this bad?
    Hydra stops with `OverrideParseException` before anything runs.

    ## Use instead
    Quote values with spaces, brackets or special characters for Hydra inside the shell
    quoting, e.g. `'trainer.logger=["console","wandb"]'`.
    """,
    before_the_cut=True,
)
ADD_EXISTING_KEY = declare(
    "VL103",
    "add-existing-key",
    "error",
    """`+key=value` on a key that already exists.

    ## What it does
    Reports Hydra's "Could not append to config. An item is already at ..." at the override.

    ## Why is this bad?
    `+` means *add*; Hydra refuses to add a key that exists and the job stops.

    ## Use instead
    `key=value` to override, or `++key=value` to add-or-override.
    """,
)
DELETE_MISSING_KEY = declare(
    "VL104",
    "delete-missing-key",
    "error",
    """`~key` deletes a key that does not exist.

    ## What it does
    Reports Hydra's "Could not delete from config" at the override.

    ## Why is this bad?
    The job stops during composition.

    ## Use instead
    Remove the override, or fix the key.
    """,
)
OVERRIDE_REJECTED = declare(
    "VL105",
    "override-rejected",
    "error",
    """Hydra rejects an override for another reason (type, sweep, merge error).

    ## What it does
    Reports any other error Hydra raises while applying a value override, such as a
    sweep (`a=1,2`) in a single run or merging a dict into a scalar.

    ## Why is this bad?
    The job stops during composition.

    ## Use instead
    What the message says: quote comma-separated values (`'key="a,b"'`), or fix the type.
    """,
)
CONFIG_COMPOSITION_ERROR = declare(
    "VL106",
    "config-composition-error",
    "error",
    """Hydra cannot compose the config (missing config group option, bad defaults list).

    ## What it does
    Composes the defaults tree with Hydra and reports its error at the config-group
    override that caused it (or at the launch).

    ## Why is this bad?
    The job stops before anything runs.

    A project's own primary config whose defaults list names one of verl's configs
    (`defaults: [ppo_trainer, _self_]`) without putting verl's config directory on Hydra's search
    path gets "Could not load 'ppo_trainer'": the finding says so, at the defaults list entry.

    ## Use instead
    An existing option of the config group (the message lists them). For a project's config that
    builds on verl's, `hydra: {searchpath: [pkg://verl.trainer.config]}` in the primary config.
    """,
)
