"""Which engine releases a launch runs with: the one place that answers it, from evidence only.

For vLLM, SGLang, vllm-ascend and torch-npu the evidence is, first match:

1. the flag (`--vllm 0.8.5`, ...) or the `[tool.verl-lint]` setting (`vllm = "0.8.5"`);
2. the installed distribution (the linter's environment is where the user runs it);
3. the requirement ranges declared by the verl tree being linted — its wheel METADATA
   (`Requires-Dist`), setup.py, pyproject.toml, requirements*.txt, and the `pip install X==v`
   pins of its docker files where it declares nothing else — and by the project around the
   script (a vendored verl: the repository root that contains it).

Declared ranges are intersected, package metadata first; a source that contradicts what is
already kept (verl's requirements.txt pinning `vllm==0.8.4` next to setup.py's
`vllm>=0.8.5,<=0.12.0`) is left out rather than emptying the range. Rules then judge a fact
over the candidate releases (`judge`): every candidate -> the rule's severity, some ->
a warning naming them, none -> silent. With no evidence at all they judge over every
release and, where that is not unanimous, stay silent and say so once per run (`notes`).
Nothing is guessed: the newest release is never assumed.
"""

# Real (not postponed) annotations: NamedTuple classes define faster, at every Hydra job start.

import ast
import os
import re
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from packaging.version import InvalidVersion, Version

from ..cache import memo
from ..catalogue import ENGINE_VERSION_UNKNOWN
from ..environment import installed_version
from ..model import Severity
from ..registry import REGISTRY

# packaging.specifiers / .requirements are imported where used: the Hydra callback only needs
# EngineReleases and notes. A specifier set (`Spec`) is a packaging SpecifierSet, or its text as
# packaging writes it (`str(SpecifierSet)`), parsed on first use (`_parsed`): what the verl tree
# declares is kept on disk as text, so a job start reads it back without packaging.specifiers
# (~5 ms) unless a rule judges a range.
Spec = object
_SPECS: dict[str, object] = {}


def _parsed(spec: Spec):
    """`spec` as a packaging SpecifierSet."""
    if not isinstance(spec, str):
        return spec
    hit = _SPECS.get(spec)
    if hit is None:
        from packaging.specifiers import SpecifierSet  # why: ~5 ms, only when a declared range is judged

        hit = _SPECS[spec] = SpecifierSet(spec)
    return hit


def _pins(spec: Spec) -> list[str]:
    """The versions of the `==` specifiers of `spec` (no wildcard), in its order."""
    if isinstance(spec, str):  # as packaging writes it: `==0.8.5`, `>=0.8.5,<=0.12.0`
        return [p[2:] for p in spec.split(",") if p.startswith("==") and not p.startswith("===") and "*" not in p]
    return [sp.version for sp in spec if sp.operator == "==" and "*" not in sp.version]


def _size(spec: Spec) -> int:
    """How many specifiers `spec` has."""
    return (len(spec.split(",")) if spec else 0) if isinstance(spec, str) else len(spec)


# key (as in Context.versions) -> (distribution, how messages name it, flag)
ENGINES: dict[str, tuple[str, str, str]] = {
    "vllm": ("vllm", "vLLM", "--vllm"),
    "sglang": ("sglang", "SGLang", "--sglang"),
    "vllm_ascend": ("vllm-ascend", "vllm-ascend", "--vllm-ascend"),
    "torch_npu": ("torch-npu", "torch-npu", "--torch-npu"),
}
_DIST_KEY = {re.sub(r"[-_.]+", "-", d).lower(): k for k, (d, _, _) in ENGINES.items()}  # PEP 503 names
MAX_READ = 1 << 20  # requirement and docker files larger than this are not read


def title(engine: str) -> str:
    return ENGINES[engine][1]


# ----------------------------------------------------------------- evidence ----


class Declared(NamedTuple):
    """One requirement on an engine found in a file: `vllm<=0.6.3` in TinyZero/requirements.txt."""

    spec: Spec
    path: str  # as shown in messages (relative to the tree or project root)


class EngineReleases(NamedTuple):
    """What is known about one engine's release: an exact version, a declared range, or nothing
    (not a rule's `evidence.Evidence` in verl's source: the releases of an engine that are in play)."""

    engine: str
    exact: Version | None = None
    # all(any(s.contains(v) for s in group) for group in groups): each group is one source (a
    # docker directory is one source whose pins are alternatives)
    groups: tuple = ()
    source: str = ""  # "--vllm", "[tool.verl-lint] vllm", "installed", "vllm<=0.6.3 in requirements.txt"

    @property
    def known(self) -> bool:
        return self.exact is not None or bool(self.groups)

    def admits(self, v: Version) -> bool:
        if self.exact is not None:
            return v == self.exact
        return all(any(_parsed(s).contains(v, prereleases=True) for s in g) for g in self.groups)

    def admits_release(self, v: Version) -> bool:
        """Like `admits`, a post release counting as its release: the 0.8.5.post1 snapshot stands
        for `vllm<=0.8.5`, the 0.5.12.post1 one for `sglang==0.5.12`."""
        base = Version(v.base_version)
        return all(
            any(_parsed(s).contains(v, prereleases=True) or _parsed(s).contains(base, prereleases=True) for s in g)
            for g in self.groups
        )

    @property
    def pinned(self) -> Version | None:
        """The one version the evidence allows (a flag, the installed one, or a declared `==X` pin)."""
        if self.exact is not None:
            return self.exact
        pins = {p for g in self.groups for s in g for p in _pins(s)}
        if len(pins) == 1 and all(len(g) == 1 and _size(g[0]) == 1 for g in self.groups):
            pin = pins.pop()
            v = _version(pin)
            if v is not None and all(_pins(g[0]) == [pin] for g in self.groups):
                return v  # every source says `==pin`: it admits the pin
            return v if v is not None and self.admits(v) else None
        return None

    def describe(self) -> str:
        """'vLLM 0.8.5 (--vllm)', 'vllm>=0.8.5,<=0.12.0 in setup.py', 'no vLLM version known'."""
        if self.exact is not None:
            return f"{title(self.engine)} {self.exact} ({self.source})"
        return self.source or f"no {title(self.engine)} version known"


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def version_problem(text: object) -> str | None:
    """None if `text` is a release version (`0.8.5`, `0.10.2rc1`), else what is wrong with it."""
    if not isinstance(text, str) or not text:
        return 'must be a version string such as "0.8.5"' + (" (quote it)" if isinstance(text, (int, float)) else "")
    if _version(text) is None:
        return f"{text!r} is not a version (e.g. 0.8.5, 0.10.2rc1)"
    return None


def resolve(
    given: dict[str, tuple[str, str]], verl_root: Path | None, project_root: Path | None
) -> dict[str, EngineReleases]:
    """The evidence for every engine. `given`: {key: (version text, where: "--vllm" / "[tool.verl-lint] vllm")}."""
    roots = tuple(dict.fromkeys(str(r) for r in (project_root, verl_root) if r is not None))
    stamps: tuple | None = None
    out = {}
    for engine, (dist, _, _) in ENGINES.items():
        text, where = given.get(engine, (None, ""))
        if text is None or _version(text) is None:
            text, where = installed_version(dist), "installed"
        if text is not None and (v := _version(text)) is not None:
            out[engine] = EngineReleases(engine, v, source=where)
            continue
        stamps = stamps if stamps is not None else tuple(_stamp(r) for r in roots)
        out[engine] = _declared_evidence(engine, roots, stamps)
    return out


def live_evidence(
    installed: dict[str, Version | None], verl_root: Path | None, project_root: Path | None
) -> dict[str, EngineReleases]:
    """`resolve` for the Hydra callback: the installed engines, else what the verl tree and the
    project declare, as `check` reads them, so both report from the same evidence. The declared
    ranges are kept on disk by the requirement files' stamps: a job start reads them back without
    parsing requirements (packaging.requirements) again."""
    out = {k: EngineReleases(k, v, source="installed") for k, v in installed.items() if k in ENGINES and v is not None}
    if len(out) == len(ENGINES):
        return out
    roots = tuple(dict.fromkeys(str(r) for r in (project_root, verl_root) if r is not None))
    stamps = tuple(_stamp(r) for r in roots)
    ident = repr(("declared engines", roots, stamps))
    declared = memo("specifiers", ident, lambda: {e: _declared_evidence(e, roots, stamps) for e in ENGINES}, dict)
    return {**declared, **out}


def declared_evidence(engine: str, roots: tuple[str, ...]) -> EngineReleases:
    """The range the trees at `roots` declare (the project's own files first), intersected."""
    return _declared_evidence(engine, roots, tuple(_stamp(r) for r in roots))


@lru_cache(maxsize=64)
def _declared_evidence(engine: str, roots: tuple[str, ...], stamps: tuple) -> EngineReleases:
    dist = ENGINES[engine][0]
    base = Path(roots[0]) if roots else None
    # per root (the project's own files before a vendored verl's): package metadata, then each
    # requirements file; the docker files (together: their pins are alternatives) only where the
    # root declares nothing else. verl's main branch still ships images of verl 0.4/0.5 pinning
    # vLLM 0.8.5/0.10.0 next to setup.py's <=0.12.0: intersected, they would drop the releases
    # verl installs today and turn "some releases" into "every release".
    sources: list[tuple[tuple[Spec, ...], list[Declared]]] = []
    for root in roots:
        shown = _shown_root(Path(root), base)
        found = [Declared(d.spec, f"{shown}{d.path}") for d in declarations(root).get(engine, ())]
        declared = [((d.spec,), [d]) for kind in ("metadata", "requirements") for d in found if _kind(d.path) == kind]
        docker = [d for d in found if _kind(d.path) == "docker"]
        sources += declared or ([(tuple(dict.fromkeys(d.spec for d in docker)), docker)] if docker else [])
    kept: list[tuple[tuple[Spec, ...], list[Declared]]] = []
    for specs, found in sources:
        if _nonempty(EngineReleases(engine, groups=tuple(s for s, _ in kept) + (specs,))):
            kept.append((specs, found))
    if not kept:
        return EngineReleases(engine)
    ev = EngineReleases(engine, groups=tuple(s for s, _ in kept))
    # say which file each admitted requirement came from: `vllm<=0.6.3 in requirements.txt`,
    # `vllm 0.8.2 / 0.8.3 pinned in docker/Dockerfile.ngc.vllm0.8 (and 1 more)`
    parts = []
    for specs, found in kept:
        if len(specs) == 1 and len(found) == 1:
            parts.append(f"{dist}{found[0].spec} in {found[0].path}")
            continue
        used = [d for d in found if _nonempty(EngineReleases(engine, groups=ev.groups + ((d.spec,),)))] or found
        pins = sorted({str(d.spec).lstrip("=") for d in used}, key=_sort_key)
        more = f" (and {len(used) - 1} more)" if len(used) > 1 else ""
        parts.append(f"{dist} {' / '.join(pins)} pinned in {used[0].path}{more}")
    return EngineReleases(engine, groups=ev.groups, source=", ".join(parts))


def _shown_root(root: Path, base: Path | None) -> str:
    """How paths under `root` are shown: relative to the project root, else under the tree's name."""
    if base is None or root == base:
        return ""
    try:
        return root.resolve().relative_to(base.resolve()).as_posix() + "/"
    except ValueError:
        return root.name + "/"


def _sort_key(text: str):
    return _version(text) or Version("0")


def _nonempty(ev: EngineReleases) -> bool:
    """Some version is admitted: probed at every version the specifiers name (and next to them)."""
    return any(ev.admits(v) for v in probes(ev))


def probes(ev: EngineReleases) -> list[Version]:
    out = {Version("0"), Version("9999")}
    for g in ev.groups:
        for s in g:
            for spec in _parsed(s):
                v = _version(spec.version.replace(".*", ""))
                if v is None:
                    continue
                rel = list(v.release) + [0] * (3 - len(v.release))
                out |= {v, Version(".".join(map(str, rel[:2] + [rel[2] + 1]))), Version(f"{v.base_version}.post1")}
                if rel[2] > 0:
                    out.add(Version(".".join(map(str, rel[:2] + [rel[2] - 1]))))
    return sorted(out)


def _kind(path: str) -> str:
    name = path.rsplit("/", 1)[-1].lower()
    if name in ("metadata", "setup.py", "pyproject.toml"):
        return "metadata"
    if name.startswith("requirements") and name.endswith(".txt"):
        return "requirements"
    return "docker"


# ------------------------------------------------------------ reading files ----


def _requirement_files(base: Path) -> list[Path]:
    return [
        *sorted(base.glob("*.dist-info/METADATA")),
        base / "setup.py",
        base / "pyproject.toml",
        *sorted(base.glob("requirements*.txt")),
        *_docker_files(base),
    ]


def _stamp(root: str) -> tuple:
    """What the declarations of `root` depend on: its requirement files' sizes and times (a
    long-lived process, such as a test session, sees an edited file)."""
    out = []
    for p in _requirement_files(Path(root)):
        try:
            st = p.stat()
        except OSError:
            continue
        out.append((str(p), st.st_mtime_ns, st.st_size))
    return tuple(out)


# A PEP 508 requirement's name and version specifier (`vllm[extra]>=0.8.5,<=0.12.0; extra == "vllm"`,
# METADATA's older `vllm (>=0.7)`); the marker is not evaluated (an engine's extra is the engine's
# requirement) and a URL requirement (`name @ url`) names no release. Read without
# packaging.requirements, whose markers import platform and subprocess at a Hydra job's start.
_REQUIREMENT = (  # a pattern: compiled (by `re`, once) when a requirement is read
    r"^\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[^\]]*\])?\s*\(?\s*([^;@()\s][^;@()]*?)?\s*\)?\s*(?:;.*)?$"
)


def declarations(root: str) -> dict[str, tuple[Declared, ...]]:
    """{engine: requirements on it} declared by the files at the top of `root` (never imported or run)."""
    return _declarations(root, _stamp(root))


@lru_cache(maxsize=32)
def _declarations(root: str, stamp: tuple) -> dict[str, tuple[Declared, ...]]:
    base = Path(root)
    out: dict[str, list[Declared]] = {}

    from packaging.specifiers import InvalidSpecifier, SpecifierSet  # not at Hydra job start (see Spec)

    def add(req_text: str, rel: str) -> None:
        m = re.match(_REQUIREMENT, req_text)
        key = _DIST_KEY.get(re.sub(r"[-_.]+", "-", m.group(1)).lower()) if m else None
        if key is None or not m.group(2):
            return
        try:
            out.setdefault(key, []).append(Declared(str(SpecifierSet(m.group(2))), rel))  # (see Spec)
        except InvalidSpecifier:
            return

    for meta in sorted(base.glob("*.dist-info/METADATA")):
        rel = f"{meta.parent.name}/METADATA"
        for line in (_read(meta) or "").splitlines():
            if line.startswith("Requires-Dist:"):
                add(line.split(":", 1)[1], rel)
    text = _read(base / "setup.py")
    if text is not None:
        for s in _string_constants(text):
            add(s, "setup.py")
    for s in _pyproject_requirements(base / "pyproject.toml"):
        add(s, "pyproject.toml")
    for p in sorted(base.glob("requirements*.txt")):
        for line in (_read(p) or "").splitlines():
            line = line.split(" #", 1)[0].strip()
            if line and not line.startswith(("#", "-")):
                add(line, p.name)
    for p in _docker_files(base):
        for req_text in _docker_pins(_read(p) or ""):
            add(req_text, p.relative_to(base).as_posix())
    return {k: tuple(v) for k, v in out.items()}


def _read(p: Path) -> str | None:
    try:
        if not p.is_file() or p.stat().st_size > MAX_READ:
            return None
        return p.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _string_constants(text: str) -> Iterable[str]:
    """Every string literal of setup.py (install_requires, extras_require and the lists they name)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    return [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and len(n.value) < 200
    ]


def _pyproject_requirements(p: Path) -> list[str]:
    text = _read(p)
    if text is None:
        return []
    try:
        import tomllib  # only a pyproject.toml needs it
    except ImportError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # only a pyproject.toml needs it
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return []
    project = data.get("project") if isinstance(data.get("project"), dict) else {}
    out: list = list(project.get("dependencies") or [])
    for group in (project.get("optional-dependencies") or {}, data.get("dependency-groups") or {}):
        if isinstance(group, dict):
            for reqs in group.values():
                out += reqs if isinstance(reqs, list) else []
    return [s for s in out if isinstance(s, str)]


def _docker_files(base: Path) -> list[Path]:
    out = sorted(p for p in base.glob("Dockerfile*") if p.is_file())
    docker = base / "docker"
    if docker.is_dir() and not docker.is_symlink():
        for dirpath, dirnames, filenames in os.walk(docker):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            if dirpath.count(os.sep) - str(docker).count(os.sep) > 3:
                dirnames[:] = []
            out += [Path(dirpath) / f for f in sorted(filenames) if "dockerfile" in f.lower()]
    return out


_PIN = (  # a pattern: compiled (by `re`, once) when a project file is read
    r"""(?i)(?<![\w./-])((?:vllm|sglang|vllm[-_]ascend|torch[-_]npu)(?:\[[^\]\s]*\])?\s*(?:===|==|~=|>=|<=|!=|<|>)\s*[\w.*+!]+(?:\s*,\s*(?:===|==|~=|>=|<=|!=|<|>)\s*[\w.*+!]+)*)"""
)


def _docker_pins(text: str) -> list[str]:
    """`pip install vllm==X` style pins in the RUN commands of a docker file (continuations joined)."""
    joined = re.sub(r"\\\r?\n", " ", text)
    out = []
    for line in joined.splitlines():
        if re.search(r"\b(pip3?|uv)\b.*\binstall\b", line):
            out += [m.replace(" ", "") for m in re.findall(_PIN, line)]
    return out


@lru_cache(maxsize=256)
def project_root(script_dir: Path) -> Path | None:
    """The repository that contains the script: the nearest directory up with `.git`, else the
    nearest with a setup.py, pyproject.toml or requirements*.txt."""
    d = script_dir.resolve()
    candidates = [d, *d.parents]
    for c in candidates:
        if (c / ".git").exists():
            return c
    for c in candidates:
        if (c / "setup.py").is_file() or (c / "pyproject.toml").is_file() or any(c.glob("requirements*.txt")):
            return c
    return None


# ------------------------------------------------------------------ judging ----


class Verdict(NamedTuple):
    """Where a fact holds among the releases the evidence admits."""

    level: str  # "all" | "some" | "none" | "skipped" (no evidence and not unanimous)
    holds: tuple = ()  # the known releases it holds on
    note: str = ""  # what the message says about versions


def judge(
    ev: EngineReleases,
    releases: Sequence[str],
    holds_at: Callable[[str], bool],
    older: bool | None = None,
    newer: bool | None = None,
) -> Verdict:
    """Judge a fact over the candidate releases.

    `releases`: the known releases (the bundled snapshots, oldest first); `holds_at(r)` the
    fact on one of them. Releases the evidence admits outside that list are unknown; `older`
    / `newer` say what the fact is there (True: holds on all, False: on none, None: unknown).
    An exact version is judged alone: `holds_at(str(exact))`."""
    t = title(ev.engine)
    if ev.exact is not None:
        ok = holds_at(str(ev.exact))
        return Verdict("all" if ok else "none", (str(ev.exact),) if ok else (), f"{t} {ev.exact}, {ev.source}")
    known = [r for r in releases if not ev.known or ev.admits_release(Version(r))]
    pin = ev.pinned
    if not known and pin is not None:  # a pinned release between two snapshots: its minor's nearest one
        same = [r for r in releases if Version(r).release[:2] == pin.release[:2]]
        known = ([r for r in same if Version(r) <= pin] or same)[-1:]
        if known:
            from packaging.specifiers import SpecifierSet  # heavy; not at Hydra job start (see Spec)

            ev = EngineReleases(
                ev.engine,
                groups=((SpecifierSet(f"=={known[0]}"),),),
                source=f"{ev.source}; checked against the bundled {known[0]}",
            )
    hold = tuple(r for r in known if holds_at(r))
    regions: list[tuple[str, bool | None]] = []
    if releases:
        lo, hi = Version(releases[0]), Version(releases[-1])
        pts = probes(ev) if ev.known else [Version("0"), Version("9999")]
        if any(v.release < lo.release and (not ev.known or ev.admits(v)) for v in pts):
            regions.append((f"releases older than {lo}", older))
        if any(v.release > hi.release and (not ev.known or ev.admits(v)) for v in pts):
            regions.append((f"releases newer than {hi}", newer))
    if not known and not regions:
        return Verdict("none")
    where = ev.source if ev.known else f"no {t} version is known"
    if len(hold) == len(known) and all(r is True for _, r in regions):
        if not ev.known:
            return Verdict("all", hold, f"every {t} release from {releases[0]} to {releases[-1]} and beyond")
        shown = ", ".join(([span(hold, releases)] if hold else []) + [w for w, _ in regions])
        return Verdict("all", hold, f"{t} {shown}: every release allowed by {where}")
    maybe = bool(hold) or any(r is True for _, r in regions)
    if not ev.known:
        return Verdict("skipped" if maybe else "none", hold)
    if maybe:
        shown = ", ".join(([span(hold, releases)] if hold else []) + [w for w, r in regions if r is True])
        return Verdict("some", hold, f"on {t} {shown}, of the releases allowed by {where}")
    return Verdict("none")


def span(subset: Sequence[str], releases: Sequence[str]) -> str:
    """'0.12.0-0.14.1' / '0.8.5.post1, 0.12.0': runs of consecutive releases."""
    index = {r: i for i, r in enumerate(releases)}
    runs: list[list[str]] = []
    for r in sorted(subset, key=lambda r: index.get(r, -1)):
        if runs and index.get(r, -9) == index.get(runs[-1][-1], -9) + 1:
            runs[-1].append(r)
        else:
            runs.append([r])
    return ", ".join(run[0] if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


# ------------------------------------------------------- once-per-run notes ----


def skipped(ctx, engine: str) -> None:
    """Record that a rule needed `engine`'s release here and had no evidence (see `notes`)."""
    ctx.skipped_engines.add(engine)


def notes(ctx) -> list:
    """One `ENGINE_VERSION_UNKNOWN` note per engine whose release was needed and unknown (kept once
    per run), naming the rules whose verdict depends on it (`Rule.engines`)."""
    out = []
    for engine in sorted(ctx.skipped_engines):
        dist, t, flag = ENGINES[engine]
        rules = ", ".join(r.code for r in REGISTRY if engine in r.engines)
        d = ctx.diag(
            ENGINE_VERSION_UNKNOWN.code,
            f"no {t} version is known ({dist} is not installed, no {flag}, and the verl tree and project declare no "
            f"{dist} "
            f"requirement): {rules} stayed silent wherever the verdict depends on the {t} release",
            help=f'pass {flag} VERSION, or set {engine.replace("_", "-")} = "VERSION" in [tool.verl-lint]',
            severity=Severity.INFO,
        )
        d.key = engine
        d.once = True
        out.append(d)
    return out


def evidence(ctx, engine: str) -> EngineReleases:
    """The evidence a Context carries for `engine` (none when the launch did not assemble any)."""
    return ctx.engines.get(engine) or EngineReleases(engine)


def context_versions(evidence_by_engine: dict[str, EngineReleases]) -> dict[str, Version | None]:
    """The exact versions (Context.versions) the evidence gives: ranges are not versions."""
    return {k: e.pinned for k, e in evidence_by_engine.items() if e.pinned is not None}
