"""A run's inputs and results: `Options` (how files are linted), `InputError` (bad input, exit
code 2) and `FileReport` (one file's findings).

Kept apart from `model.py`, whose values a Hydra job start needs: the callback lints one live
config and never builds these (defining them cost each job start ~1.5 ms).
"""

import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .files import read_regular
from .limits import MAX_LAUNCHES
from .model import Diagnostic, Severity, Span, VerlTree
from .terminal import safe


@dataclass
class Options:
    """How files are linted: from flags and settings (check.build_options)."""

    verl_tree: VerlTree | None = None  # from --verl-root / --verl
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)  # per-rule overrides
    # Versions that win over the installed ones (--vllm ...): key as in environment.TRACKED.
    versions: dict[str, str] = field(default_factory=dict)
    version_origin: dict[str, str] = field(default_factory=dict)  # key -> "--vllm" / "[tool.verl-lint] vllm"
    allowed_roots: tuple[Path, ...] = ()  # `source` may read files under these
    debug: bool = False
    max_bytes: int = 4 * 2**20  # larger files get a FILE_TOO_LARGE finding instead of an analysis
    timeout: float = (
        20.0  # seconds per step (the file's shell analysis, each launch) before ANALYSIS_TIMEOUT (0: no limit)
    )
    max_launches: int = MAX_LAUNCHES  # launch analyses per file; the rest get ANALYSIS_TIMEOUT (limits.py)
    cwd: str | None = None  # where the scripts are run from (--cwd); None: assumed per script
    gpu_gib: float | None = (
        None  # memory per GPU (--gpu / --gpu-memory, the gpu setting); None: the memory rules are silent
    )
    gpu_origin: str = ""  # "--gpu H100", "[tool.verl-lint] gpu"
    models_online: bool = False  # --models online / the models setting: a model's config.json from the hub


@dataclass
class InputError:
    """Bad input: reported as one line and exit code 2; the other files still run."""

    path: str
    message: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:  # printed to a terminal: the path and message may come from a hostile tree
        loc = f"{self.path}:{self.line}:{self.col}" if self.line else self.path
        return safe(f"{loc}: error: {self.message}")


@dataclass
class FileReport:
    """One file's findings and input errors, with what the report prints of it."""

    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    launches: int = 0
    text: str | None = None  # kept for the code frames of the text renderer
    verl: set[str] = field(default_factory=set)  # the verl releases its launches were linted against
    note: str = ""  # how the file was linted, when not as a script (a primary config: as which launch)
    # Per value of a project config file (its span): the launches in whose config it is in effect.
    file_value_users: dict[Span, set[Span]] = field(default_factory=dict)
    cached: bool = False  # read back from the result cache (results.py)

    def text_of(self, path: str) -> str | None:
        """The text a finding's span points into: the script's own, else the file it names (a file
        the script sources, a project config file), read once."""
        if path == self.path or path.startswith("<"):
            return self.text
        try:
            return _file_text(path, os.stat(path).st_mtime_ns)
        except OSError:
            return None


@lru_cache(maxsize=256)
def _file_text(path: str, _mtime: int) -> str | None:
    """A file's text, read once per version (a --fix that edits it is read again)."""
    try:
        return read_regular(path)[: 4 * 2**20].decode("utf-8", "replace")
    except OSError:
        return None
