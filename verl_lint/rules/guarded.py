"""2xx, derived from code: keys the user sets that verl reads only under a condition this launch turns off.

The evidence is the code of the verl tree being linted (`config/guards.py`): every place that
reads the key (or a node above it), and the `if`s around each. When every such read sits
under a condition on other keys of the same config that the composed config makes false, the
setting changes nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..config.context import Context
from ..config.reader import app_sources
from ..model import Unknown
from ..registry import Subject, lazy_module, rule
from .unread import read_unseen, silent_value, tree_index

if TYPE_CHECKING:
    from ..config.guards import Cond, Read

# The rule runs only in `check` (not in the Hydra callback, which imports every rule module at
# each job start): the ast reader loads when it first runs.
guards = lazy_module("verl_lint.config.guards")


def _children(ctx: Context, path: tuple[str, ...]) -> frozenset[str]:
    """The keys of the config node at `path` (none where it is not a node, or cannot be resolved)."""
    return ctx.section_keys(".".join(path))


def _anchor(ctx: Context, chain: tuple[str, ...], q: tuple[str, ...]) -> tuple[int, tuple[str, ...]] | None:
    """Where a read's chain meets the config, if the read may be of the key `q`: (j, path) such
    that `chain[:j]` is the config node at `path` (`self.config` -> the actor, reading
    `self.config.use_kl_loss`). None when the read is of another node: a name of `q`'s parent's
    siblings stands where `q`'s parent would (`self.config.ref.x` is not `...actor.x`)."""
    k = 0
    while k < min(len(chain), len(q)) and chain[-1 - k] == q[-1 - k]:
        k += 1
    if k < len(chain) and k < len(q) and chain[-1 - k] in _children(ctx, q[: -k - 1]):
        return None
    j = max(1, len(chain) - k)
    return j, q[: len(q) - (len(chain) - j)]


class _Judge:
    """Evaluates the conditions of reads against one launch's config."""

    def __init__(self, ctx: Context, src: guards.Sources):
        self.ctx, self.src = ctx, src
        self._keys: list[str] | None = None

    def value(self, key: str):
        """The guard key's value as the code sees it, or Unknown: absent, left to run time, or
        assigned somewhere by the code itself. A key a launch passing `"$@"` leaves to its caller
        has the value the script gives it (the finding says the caller may change it)."""
        ctx = self.ctx
        if not ctx.has(key):
            return Unknown("absent")
        uses = self.src.uses(key.rsplit(".", 1)[-1])
        if uses is None or uses.writes:
            return Unknown("the code assigns it, or may")
        v = ctx.get(key)
        return v if isinstance(v, (bool, int, float, str, type(None))) else Unknown("not a scalar")

    def holds(
        self, cond: Cond, anchor: tuple[int, tuple[str, ...]], chain: tuple[str, ...], used: list[str]
    ) -> bool | None:
        """The condition's truth at the read (None: not known), appending the keys it read to `used`."""
        kind = cond[0]
        if kind == "not":
            v = self.holds(cond[1], anchor, chain, used)
            return None if v is None else not v
        if kind in ("and", "or"):
            vals = [self.holds(c, anchor, chain, used) for c in cond[1]]
            stop = kind == "or"  # the value that decides
            if stop in vals:
                return stop
            return None if None in vals else not stop
        if kind != "test":
            return None
        _, gchain, op, consts, _text = cond
        j, path = anchor
        if gchain[:j] != chain[:j] or len(gchain) <= j:
            return None  # not a key of the same config object
        key = ".".join((*path, *gchain[j:]))
        v = self.value(key)
        if isinstance(v, Unknown):
            return None
        used.append(key)
        if op == "truth":
            return bool(v)
        if op in ("is", "is not"):
            return (v is consts[0]) == (op == "is")
        same = any(v == c and isinstance(v, bool) == isinstance(c, bool) for c in consts)
        return same if op in ("==", "in") else not same

    def off(self, read: Read, q: tuple[str, ...]) -> tuple[str, list[str], bool] | None | bool:
        """For a read that may be of `q`: (the condition's text, its keys, whether other config
        nodes fit the read as well as `q`'s) when a condition it runs under is false; None when it
        may run; False when it reads another node."""
        if read.chain is None:
            return None
        anchor = _anchor(self.ctx, read.chain, q)
        if anchor is None:
            return False
        for cond, want, text in read.guards:
            used: list[str] = []
            if self.holds(cond, anchor, read.chain, used) is (not want):
                return (text if want else f"not ({text})"), used, self.fits(read.chain[anchor[0] :]) > 1
        return None

    def fits(self, tail: tuple[str, ...]) -> int:
        """How many config nodes have the keys `tail` below them (`self.config.mtp.x` fits the
        actor's model and the critic's): more than one, and the code may be given another."""
        if self._keys is None:
            self._keys = self.ctx.keys()
        path = ".".join(tail)
        return sum(1 for k in self._keys if k == path or k.endswith("." + path))


def _interpolated_names(ctx: Context, index) -> set[str]:
    """Names inside interpolations (the tree's and the entry point's YAML files, the launch's
    overrides): a key one of them reads is read whenever the key holding it is."""
    return set(index.interpolated) | ctx.interpolated()


@rule(
    "VL233",
    "key-read-only-under-off-condition",
    "warning",
    in_callback=False,
    subject=Subject(last=True),  # the last setting of a key is the one that sets it
)
def key_read_only_under_off_condition(ctx: Context, settings):
    """A key you set that verl reads only under a condition your config turns off.

    ## What it does
    For each key the command line sets, finds every place in the verl tree being linted (and
    the entry point's own packages) that reads it, or a node above it (`algorithm.kl_ctrl` for
    `algorithm.kl_ctrl.kl_coef`), with the conditions each read runs under (`if`, `elif`,
    `else`, `while`, `x if c else y`, `a and b`, within its function). When every read sits
    under a condition on keys of the same config object (`self.config.algorithm.use_kl_in_reward`
    next to `self.config.algorithm.kl_ctrl`) that the composed config makes false, the key is
    reported with that condition and where it is.

    It stays silent when it cannot tell: a read through something it does not follow (a key
    named in a string, a function called only under a condition), a condition key the code
    itself assigns, one left to run time, a node read whole (`**`, iteration, `to_container`,
    `*_kwargs`), a name an interpolation reads; when the value is what happens anyway (`0`,
    `False`, `null`, empty); and when you turned the switch off yourself
    (`algorithm.use_kl_in_reward=False` next to `algorithm.kl_ctrl.kl_coef=0.001` is a
    template's leftover, not a mistake; a switch you turned on that makes the key moot, such as a
    dynamic batch size, is reported). A curated record of the same override (VL2xx) wins: it
    knows more about the release.

    A script that passes its own arguments on (`"$@"`) is judged as written: the switch it leaves
    at verl's default is off when the script runs as it is, and the finding says that the caller
    could turn it on.

    ## Why is this bad?
    Hydra composes the value and verl never looks at it: `kl_ctrl.kl_coef=0.01` without
    `algorithm.use_kl_in_reward=True` trains with no KL penalty in the reward, and nothing says so.

    ## Use instead
    Turn on the condition the finding names (`algorithm.use_kl_in_reward=True`), or drop the key.

    ## Where in verl
    Derived from the tree itself (`verl_lint/config/guards.py`). In verl 0.9.1, for example,
    `algorithm.kl_ctrl` is read only under `if self.config.algorithm.use_kl_in_reward:`
    (`verl/trainer/ppo/ray_trainer.py:364`, `verl/trainer/ppo/v1/trainer_base.py:126`), and
    `kl_loss_type` only under `if config.use_kl_loss:` (`verl/workers/utils/losses.py:131`).
    """
    if ctx.app.verl is None:
        return
    index = tree_index(ctx)
    src = guards.sources(ctx.app.verl.root, app_sources(ctx.app))
    judge = _Judge(ctx, src)
    interpolated: set[str] | None = None
    for o in settings:
        if o.value_unknown is not None:
            continue
        parts = tuple(o.key.split("."))
        if (
            len(parts) < 2
            or not all(p.isidentifier() for p in parts)
            or read_unseen(ctx, list(parts), index)
            or silent_value(ctx.get(o.key, None))
        ):
            continue
        if interpolated is None:
            interpolated = _interpolated_names(ctx, index)
        for depth in range(len(parts), 1, -1):  # the key, then the nodes above it
            q = parts[:depth]
            if q[-1] in interpolated or index.built(q[-1]):
                continue  # read by an interpolation or through an f-string: not followed
            uses = src.uses(q[-1])
            found = _all_off(judge, uses.reads, q) if uses is not None else None
            if found:
                if not any(ctx.user_set(k) and not ctx.get(k) for _, _, used, _ in found for k in used):
                    yield _finding(ctx, o, q, found)
                break


def _all_off(
    judge: _Judge, reads: tuple[Read, ...], q: tuple[str, ...]
) -> list[tuple[Read, str, list[str], bool]] | None:
    """Each read that may be of `q`, with the false condition it runs under; None when one may run."""
    out = []
    for r in reads:
        verdict = judge.off(r, q)
        if verdict is None:
            return None
        if verdict is not False:
            out.append((r, *verdict))
    return out or None


def _finding(ctx: Context, o, q: tuple[str, ...], found: list[tuple[Read, str, list[str], bool]]):
    node = ".".join(q)
    what = f"`{o.key}`" if node == o.key else f"`{node}`, the node above `{o.key}`,"
    found = sorted(found, key=lambda f: _first(ctx, f[0]))
    keys = list(dict.fromkeys(k for _, _, used, _ in found for k in used))
    values = ", ".join(f"`{k}={_show(ctx.get(k))}`" + _whose(ctx, k) for k in keys)
    r, cond, _, _ = found[0]
    places = f"{r.file}:{r.line}" + (
        f" and {len(found) - 1} more place{'s' * (len(found) > 2)}" if len(found) > 1 else ""
    )
    where = f"verl {ctx.verl_version}" if ctx.verl_version else "this verl tree"
    help = "set " + ", ".join(f"`{k}`" for k in keys) + f" so that `{cond}` holds, or remove the override"
    if any(ambiguous for *_, ambiguous in found):
        # The code reads a node of that shape, maybe another section's: that `q` is read nowhere
        # else holds either way; that the condition would make it read does not.
        where += " (in code that may be given another section with the same keys)"
        help = (
            "remove the override: nothing else reads it, and whether that condition would make verl read it "
            "depends on which section the code is given"
        )
    return ctx.diag(
        "VL233",
        f"{where} reads {what} only when `{cond}` is true ({places}); this launch has {values}: the setting has no "
        "effect",
        key=o.key,
        span=o.word.span,
        help=help,
        related=keys,
    )


def _first(ctx: Context, r: Read) -> tuple:
    """The order places are named in: the entry point's own package, verl's trainer, the rest."""
    root = ctx.verl_root
    app = Path(ctx.app.file).resolve().parent
    own = root is not None and (root / r.file).resolve().is_relative_to(app)
    return (not own, not r.file.startswith("verl/trainer/"), "experimental" in r.file, r.file, r.line)


def _whose(ctx: Context, key: str) -> str:
    """Who chose a condition key's value, as the finding says it: the user, or verl's default
    (which a launch passing `"$@"` leaves to its caller)."""
    if ctx.user_set(key):
        return ""
    return ' (the default, unless the caller\'s "$@" sets it)' if ctx.left_to_caller(key) else " (the default)"


def _show(v) -> str:
    return "null" if v is None else str(v)
