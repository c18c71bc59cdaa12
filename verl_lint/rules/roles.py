"""Which workers a launch runs, as the verl tree (and the launch's own entry point) decides it:
read as text and with `ast`, never imported. Each answer is True, False or None (not known:
the code could not be read or decided, or a value is only known at run time); a rule that
needs one stays silent on None.

- The critic (`uses_critic`): `need_critic` (0.6+: `critic.enable` when set, else a GAE
  advantage estimator) or the trainer's own GAE test (0.4-0.5).
- The separate reference-policy worker (`ref_worker`): the entry point puts `Role.RefPolicy`
  into its role -> worker mapping, unconditionally in verl 0.1-0.3, under
  `algorithm.use_kl_in_reward or actor.use_kl_loss` from 0.4, and not at all for the engine
  workers of 0.7+ (`trainer.use_legacy_worker_impl=disable`, which fuse the reference into the
  actor's worker). The conditions around that statement in the entry point's own file are
  decided on the launch's config (`config` there is the whole composed config).
- The reference policy the config validation checks (`ref_policy`): the entry point's
  `use_reference_policy=...` argument to validate_config (0.6+), else the trainer's
  `self.use_reference_policy = ...` (0.1-0.5). A call of a one-line function
  (`need_reference_policy(config)`) is read through its `return`; `Role.RefPolicy in mapping`
  is `ref_worker`.
"""

from __future__ import annotations

import ast
import os
import re
import warnings
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from ..cache import remembered
from ..config.context import MISSING, Context
from ..evidence import Evidence, source_text
from ..model import Unknown
from ..registry import lazy_module

NEED_CRITIC = Evidence(("verl/trainer/ppo/utils.py",), r"if config\.critic\.enable is not None")
# The trainer trains a critic for GAE: 0.3+ `AdvantageEstimator.GAE`, 0.2 `'gae'`, 0.1 `'gae'` with the
# critic's worker built in between.
GAE_CRITIC = Evidence(
    ("verl/trainer/ppo/ray_trainer.py",),
    r"adv_estimator == (?:AdvantageEstimator\.GAE|'gae'):(?:[^\n]*\n){1,4}?\s*self\.use_critic = True",
)
TRAINER = "verl/trainer/ppo/ray_trainer.py"
ROLE = ("Role", "RefPolicy")
# lazy_module: the Hydra callback imports every rule at each job start; the evaluator (and the
# packaging it reads versions with) loads only when a wiring condition is decided.
expressions = lazy_module("verl_lint.engines.expressions")
code_reads = lazy_module("verl_lint.config.guards")  # ast reads: on a cache miss or a `Role.RefPolicy in x` test
_UNKNOWN_NAME = "__verl_lint_unknown__"  # stands for a sub-expression that cannot be decided


def uses_critic(ctx: Context) -> bool | None:
    """Whether this launch trains a critic, as the tree decides it; None when unknown."""
    if ctx.verl_has(NEED_CRITIC):
        enable = ctx.get("critic.enable", None)
        if isinstance(enable, bool):
            return enable
        if enable is not None:
            return None  # only known at run time
    elif not ctx.verl_has(GAE_CRITIC):
        return None
    adv = ctx.text("algorithm.adv_estimator")
    return None if adv is None else adv == "gae"


def ref_worker(ctx: Context) -> bool | None:
    """Whether the launch's entry point creates the separate reference-policy worker."""
    path = Path(ctx.app.file)
    wiring = _wiring(str(path))
    if not wiring:
        return None  # the wiring is not in this file (or not in a form read here)
    answers = set()
    for guards, locals_ in wiring:
        answer: bool | None = True
        for want, text in guards:
            v = _decide(ctx, text, path, locals_)
            if v is None:
                answer = None
            elif v != want:
                answer = False
                break
        answers.add(answer)
    return True if True in answers else False if answers == {False} else None


def _wiring(path: str) -> tuple[tuple[tuple[tuple[bool, str], ...], dict[str, str]], ...]:
    """Each statement of the file at `path` that puts `Role.RefPolicy` into a mapping, as the
    guards it runs under ((the value the test must have, its text), ...) and the names its
    function assigns once."""
    f = _file(path)
    return f.wiring if f is not None else ()


def _read_wiring(path: str, module: ast.Module) -> tuple[tuple[tuple[tuple[bool, str], ...], dict[str, str]], ...]:
    stores = _ref_stores(module)
    reads = code_reads.uses_in(path, source_text(path) or "", module, ROLE[1]).reads
    return tuple(
        (tuple((want, text) for _c, want, text in r.guards), _locals(module, r.line))
        for r in reads
        if r.line in stores and r.chain == ROLE
    )


def ref_policy(ctx: Context) -> bool | None:
    """Whether the config validation checks the reference policy's settings for this launch
    (several size rules ask: worked out once per launch)."""
    return ctx.once(_ref_policy)


def _ref_policy(ctx: Context) -> bool | None:
    path = Path(ctx.app.file)
    f = _file(str(path))
    if f is not None and f.validation is not None:
        return _decide(ctx, f.validation[0], path, f.validation[1])
    root = ctx.verl_root
    if root is None:
        return None
    trainer = root / TRAINER
    expr = _trainer_assignment(str(trainer))
    return _decide(ctx, expr, trainer, {}) if expr is not None else None


def _validation_argument(module: ast.Module) -> tuple[str, dict[str, str]] | None:
    """The entry point's `use_reference_policy=...` argument: (its source text, the names its
    function assigns once); None when the file passes none."""
    for node in ast.walk(module):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg == "use_reference_policy":
                    return ast.unparse(kw.value), _locals(module, node.lineno)
    return None


@lru_cache(maxsize=64)
def _trainer_assignment(path: str) -> str | None:
    """The right side of the trainer's `self.use_reference_policy = ...` (0.1-0.5)."""
    m = re.search(r"^\s*self\.use_reference_policy = (.+)$", source_text(path) or "", re.M)
    return m.group(1) if m else None


class _File(NamedTuple):
    """What is read here from one Python file (an entry point, a module it imports from)."""

    validation: tuple[str, dict[str, str]] | None  # `use_reference_policy=...`: _validation_argument
    wiring: tuple  # _wiring
    imports: dict[str, str]  # name -> the module of its `from MODULE import name`
    functions: dict[
        str, tuple[str, list[str]] | None
    ]  # top-level function -> (its one `return`'s expression, parameters); None: more than that


@lru_cache(maxsize=256)  # per process; on disk per file, its size and mtime: a Hydra job start parses nothing
def _file(path: str) -> _File | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return remembered("facts", "roles: python files", (path, st.st_size, st.st_mtime_ns), lambda: _read_file(path))


def _read_file(path: str) -> _File | None:
    module = _module(path)
    if module is None:
        return None
    imports: dict[str, str] = {}
    functions: dict[str, tuple[str, list[str]] | None] = {}
    for node in module.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            imports.update({a.name: node.module for a in node.names if a.asname is None})
        elif isinstance(node, ast.FunctionDef) and node.name not in functions:
            body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            one = len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None
            functions[node.name] = (ast.unparse(body[0].value), [a.arg for a in node.args.args]) if one else None
    return _File(_validation_argument(module), _read_wiring(path, module), imports, functions)


@lru_cache(maxsize=256)
def _module(path: str) -> ast.Module | None:
    text = source_text(path)
    try:
        with warnings.catch_warnings():  # a bad escape in the tree's code is not ours to report
            warnings.simplefilter("ignore")
            return ast.parse(text) if text is not None else None
    except (SyntaxError, ValueError, RecursionError):
        return None


def _ref_stores(module: ast.Module) -> set[int]:
    """The lines where `Role.RefPolicy` becomes a key of a mapping: `{Role.RefPolicy: ...}` or
    `mapping[Role.RefPolicy] = ...`."""
    lines = set()
    for node in ast.walk(module):
        if isinstance(node, ast.Dict):
            lines.update(k.lineno for k in node.keys if k is not None and code_reads.chain_of(k) == ROLE)
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.ctx, ast.Store)
            and code_reads.chain_of(node.slice) == ROLE
        ):
            lines.add(node.slice.lineno)
    return lines


def _locals(module: ast.Module, line: int) -> dict[str, str]:
    """The names the function around `line` assigns once (`impl = config.trainer.get(...)`), as
    expressions; `config` is the composed config."""
    out: dict[str, str] = {"config": "self.config"}
    for fn in ast.walk(module):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.lineno <= line <= (
            fn.end_lineno or fn.lineno
        ):
            seen: dict[str, list[str]] = {}
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    seen.setdefault(node.targets[0].id, []).append(ast.unparse(node.value))
            out.update({name: exprs[0] for name, exprs in seen.items() if len(exprs) == 1 and name != "config"})
    return out


def _decide(ctx: Context, expr: str, where: Path, locals_: dict[str, str]) -> bool | None:
    """The truth of the source expression `expr` (of the file `where`) on the launch's config."""
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return None
    node = _Inline(ctx, where).visit(node)

    def lookup(key: str):
        if ctx.left_to_caller(key):
            return expressions.UNKNOWN  # the caller may set it
        v = ctx.get(key)
        if v is MISSING:
            return expressions.Evaluator.MISSING
        return expressions.UNKNOWN if isinstance(v, Unknown) else v

    v = expressions.Evaluator(lookup, locals_).eval(ast.unparse(node))
    if v is expressions.UNKNOWN:
        return None
    try:
        return bool(v)
    except TypeError:
        return None


class _Inline(ast.NodeTransformer):
    """Reads calls of one-line functions through their `return`, and `Role.RefPolicy in x` as
    `ref_worker`; whatever else the evaluator cannot know stays unknown."""

    def __init__(self, ctx: Context, where: Path, depth: int = 0):
        self.ctx, self.where, self.depth = ctx, where, depth

    def visit_Compare(self, node: ast.Compare):
        if (
            len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and code_reads.chain_of(node.left) == ROLE
        ):
            v = ref_worker(self.ctx)
            if v is None:
                return ast.Name(_UNKNOWN_NAME, ast.Load())
            return ast.Constant(v == isinstance(node.ops[0], ast.In))
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call):
        fn = (
            _function(self.ctx, self.where, node.func.id)
            if isinstance(node.func, ast.Name) and self.depth < 3
            else None
        )
        if fn is None:
            return self.generic_visit(node)
        body, params, home = fn
        args = dict(zip(params, node.args)) | {kw.arg: kw.value for kw in node.keywords if kw.arg}
        if set(args) != set(params):
            return ast.Name(_UNKNOWN_NAME, ast.Load())
        inlined = _Substitute(args).visit(ast.parse(body, mode="eval").body)
        return _Inline(self.ctx, home, self.depth + 1).visit(inlined)


class _Substitute(ast.NodeTransformer):
    def __init__(self, args: dict[str, ast.expr]):
        self.args = args

    def visit_Name(self, node: ast.Name):
        return self.args.get(node.id, node)


def _function(ctx: Context, where: Path, name: str) -> tuple[str, list[str], Path] | None:
    """The function `name` as the module at `where` sees it (defined there, or imported from a
    module of the verl tree or beside the file), when its body is one `return`: (the returned
    expression, its parameters, its file)."""
    return _function_in(where, name, ctx.verl_root)


@lru_cache(maxsize=256)  # per file and name: every launch of an entry point asks the same
def _function_in(where: Path, name: str, verl_root: Path | None) -> tuple[str, list[str], Path] | None:
    f = _file(str(where))
    if f is None:
        return None
    homes = [where]
    if name in f.imports:
        rel = Path(*f.imports[name].split(".")).with_suffix(".py")
        homes = [base / rel for base in (verl_root, *where.parents) if base is not None]
    for home in homes:
        found = _file(str(home))
        if found is not None and name in found.functions:
            fn = found.functions[name]
            return (fn[0], fn[1], home) if fn is not None else None
    return None
