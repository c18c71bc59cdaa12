"""Files other than shell scripts that verl-lint reads: launches written inside them, and a
project's primary Hydra configs.

- Markdown and reStructuredText docs: their fenced / `code-block` shell blocks (verl's own docs
  hold the `main_ppo` launches users copy).
- GitHub Actions workflows (`run:` of each step) and SkyPilot task files (`setup:`, `run:`).
- A primary config: a YAML file whose defaults list names a verl config (`defaults:
  [ppo_trainer, _self_]`), linted as the config of a launch that uses it as it is.

A doc or workflow becomes a *shell view*: the same text with every line that is not shell
blanked, so each launch keeps its real line and column in the containing file. Read as text,
never run.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from .launchers import launch_pattern

DOCS = (".md", ".markdown", ".rst")
YAMLS = (".yaml", ".yml")


# A verl launch, as a quick test of a block's text (the shell front end decides what it really is):
# a launcher of the table that starts an app, written as a program (after a blank, an operator, a quote or a path).
@cache
def _launch() -> re.Pattern:  # compiled when a doc or YAML file is read, not at every run's start
    return re.compile(r"(?:^|[\s;&|(=\"'/])" + launch_pattern(), re.MULTILINE)


_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*\{?\s*([\w+-]*)")
_SHELL_LANGS = {"", "bash", "sh", "shell", "zsh", "console", "shell-session", "shellsession", "terminal"}
_RST_BLOCK = re.compile(r"^(\s*)\.\.\s+(?:code-block|code|sourcecode)::\s*(\w*)\s*$")
_PROMPT = re.compile(r"^(\s*)\$\s")  # `$ python3 ...` in a console block
_PRIMARY_NAMES = re.compile(r"(?:^|_)trainer$|^generation$|^evaluation$")  # verl's primary configs


def kind(path: Path, text: str) -> str | None:
    """ "doc", "workflow" (a CI or SkyPilot file with shell steps) or "config" (a primary config)
    for a file verl-lint reads beside shell scripts, else None."""
    suffix = path.suffix.lower()
    if suffix in DOCS:
        view = doc_view(text, suffix == ".rst")
        return "doc" if _launch().search(view) else None
    if suffix in YAMLS:
        if "defaults" in text and primary_defaults(text, path):
            return "config"
        if ("run:" in text or "setup:" in text) and _launch().search(workflow_view(text)):
            return "workflow"
    return None


def shell_view(path: Path, text: str) -> str:
    """The shell text of a doc or workflow, line for line (other lines blank)."""
    if path.suffix.lower() in DOCS:
        return doc_view(text, path.suffix.lower() == ".rst")
    return workflow_view(text)


def doc_view(text: str, rst: bool) -> str:
    """The shell blocks of a doc that hold a launch (a block of fragments, output or pseudo-code
    is not a command anyone runs as it is), other lines blank."""
    lines = text.split("\n")
    keep = [False] * len(lines)

    def block(start: int, end: int, options: bool = False) -> None:
        body = [j for j in range(start, end) if not (options and lines[j].lstrip().startswith(":"))]  # rst `:linenos:`
        if _launch().search("\n".join(lines[j] for j in body)):
            for j in body:
                keep[j] = True

    i = 0
    while i < len(lines):
        if rst:
            m = _RST_BLOCK.match(lines[i])
            if m and m.group(2).lower() in _SHELL_LANGS:
                indent = len(m.group(1))
                j = i + 1
                while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent):
                    j += 1
                block(i + 1, j, options=True)
                i = j
                continue
        m = _FENCE.match(lines[i])
        if m:
            fence, lang = m.group(2), m.group(3).lower()
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(fence[0] * len(fence)):
                j += 1
            if lang in _SHELL_LANGS:
                block(i + 1, j)
            i = j + 1
            continue
        i += 1
    return "\n".join(_placeholders(_unprompted(line)) if k else "" for line, k in zip(lines, keep))


def _placeholders(line: str) -> str:
    """A doc's `...` standing for more overrides is not one (blanked, the continuation kept)."""
    return re.sub(r"(?<!\S)(?:\.\.\.|…)(?=\s|$)", lambda m: " " * len(m.group(0)), line)


def _unprompted(line: str) -> str:
    """A console line without its `$ ` prompt (spaces keep the columns)."""
    m = _PROMPT.match(line)
    if m:
        return m.group(1) + " " * (m.end() - m.end(1)) + line[m.end() :]
    return line


def workflow_view(text: str) -> str:
    """The `run:` / `setup:` scripts of a GitHub Actions workflow or SkyPilot task, in place."""
    lines = text.split("\n")
    out = [""] * len(lines)
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)(?:-\s+)?(run|setup):\s*(.*)$", lines[i])
        if not m:
            i += 1
            continue
        key_indent, rest = len(m.group(1)), m.group(3).rstrip()
        if rest and rest[0] in "|>":  # a block scalar: the indented lines below
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > key_indent):
                out[j] = lines[j]
                j += 1
            i = j
            continue
        if rest and rest[0] not in "\"'[{":  # a plain one-line command, in its columns
            out[i] = " " * m.start(3) + rest
        i += 1
    return "\n".join(out)


def primary_defaults(text: str, path: Path, depth: int = 0) -> bool:
    """The YAML's own defaults list names a verl primary config (`ppo_trainer`, `_self_` beside
    it), or a file beside it that does: a project's primary config, not a group file (whose
    entries are `group@package: name`)."""
    import yaml  # ~10 ms: only for a YAML file that has a defaults list, not on a warm run of scripts

    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return False
    defaults = data.get("defaults") if isinstance(data, dict) else None
    if not isinstance(defaults, list):
        return False
    for name in (d.lstrip("/") for d in defaults if isinstance(d, str) and d != "_self_"):
        if _PRIMARY_NAMES.search(name):
            return True
        beside = path.parent / f"{name}.yaml"
        if depth < 3 and beside != path and beside.is_file():
            try:
                if primary_defaults(beside.read_text(encoding="utf-8", errors="replace"), beside, depth + 1):
                    return True
            except OSError:
                continue
    return False


# ------------------------------------------------------- a primary config ----

DEFAULT_APP = "verl.trainer.main_ppo"
_HYDRA_MAIN = re.compile(r"@hydra\.main\(([^)]*)\)")
_CONFIG_PATH = re.compile(r"config_path\s*=\s*['\"]([^'\"]*)['\"]")
_MODULE = re.compile(r"-m\s+([A-Za-z_][\w.]*)")


def config_launch(config: Path) -> tuple[str, str]:
    """The launch a primary config is linted as (`python3 -m APP --config-path=DIR
    --config-name=NAME`), and how its app was chosen: a script of the project that launches it,
    else an `@hydra.main` whose config_path is the config's directory, else verl's default
    entry point. Found by reading text, nothing is imported."""
    config = config.resolve()
    root = _project_root(config)
    app, how = (
        _app_from_scripts(config, root)
        or _app_from_hydra_main(config, root)
        or (f"-m {DEFAULT_APP}", "verl's default entry point: no script or app of the project names this config")
    )
    launch = f"python3 {app} --config-path='{config.parent}' --config-name='{config.stem}'\n"
    return launch, f"linted as the primary config of `python3 {app}` ({how})"


def _project_root(path: Path) -> Path:
    for d in path.parents:
        if (d / ".git").exists():
            return d
    return path.parent.parent if len(path.parents) > 1 else path.parent


def _files(root: Path, suffix: str, limit: int = 3000):
    for n, f in enumerate(sorted(root.rglob(f"*{suffix}"))):
        if n >= limit:
            return
        if ".git" not in f.parts and f.is_file():
            yield f


def _app_from_scripts(config: Path, root: Path) -> tuple[str, str] | None:
    named = re.compile(rf"(?:--config-name|-cn)[= ]['\"]?{re.escape(config.stem)}(?:\.yaml)?['\"]?(?:\s|$)")
    for f in _files(root, ".sh"):
        try:
            text = f.read_text(encoding="utf-8", errors="replace").replace("\\\n", " ")
        except OSError:
            continue
        for line in text.splitlines():
            module = _MODULE.search(line)
            if module and named.search(line) and (config.parent.name in line or "$" in line):
                return f"-m {module.group(1)}", f"as {f.relative_to(root)} launches it"
    return None


def _app_from_hydra_main(config: Path, root: Path) -> tuple[str, str] | None:
    for f in _files(root, ".py"):
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for m in _HYDRA_MAIN.finditer(text):
            where = _CONFIG_PATH.search(m.group(1))
            if where and (f.parent / where.group(1)).resolve() == config.parent:
                return f"'{f}'", f"whose @hydra.main in {f.relative_to(root)} reads this directory"
    return None
