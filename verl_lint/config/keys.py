"""The keys of a composed config: listing them, and the real key closest to a misspelt or moved one."""

from __future__ import annotations

from omegaconf import DictConfig


def all_keys(cfg, prefix: str = "", mandatory: list[str] | None = None) -> list[str]:
    """Every dotted key of `cfg`, depth first: each section's keys right after it (a section that
    is None, missing or an interpolation has no keys below it). Read from the nodes' own dicts, which OmegaConf's
    accessors check one by one at several times the cost: a launch has ~2,000 keys. The keys
    whose value is `???` (OmegaConf's mandatory marker) are added to `mandatory` when it is given:
    one walk for both."""
    out: list[str] = []
    add = out.append

    def walk(content: dict, above: str) -> None:  # `above`: the parent's key and a dot, or the prefix
        for k, child in content.items():
            full = above + k if k.__class__ is str else above + format(k) if above else str(k)
            add(full)
            own = child.__dict__
            sub = own.get("_content", own.get("_val"))  # a container's content, a value node's value
            if isinstance(sub, dict):
                if isinstance(child, DictConfig):
                    walk(sub, full + ".")
            elif mandatory is not None and isinstance(sub, str) and sub == "???":
                mandatory.append(full)

    content = cfg.__dict__["_content"] if isinstance(cfg, DictConfig) else None
    if isinstance(content, dict):
        walk(content, f"{prefix}." if prefix else "")
    return out


def plain_node(cfg, key: str):
    """The node at `key` when the path to it is plain (dicts, no interpolation, missing value or
    None on the way; the node itself may be anything), else None. Read from the dicts' contents
    (a key OmegaConf would convert, as in a dict of int keys, is not plain)."""
    if not isinstance(cfg, DictConfig) or "[" in key:
        return None
    node = cfg
    for part in key.split("."):
        if not part or not isinstance(node, DictConfig):
            return None
        content = node.__dict__["_content"]
        if not isinstance(content, dict):  # None, `???` or an interpolation
            return None
        node = content.get(part)
        if node is None:
            return None
    return node


def same_name_elsewhere(cfg, key: str, keys: list[str] | None = None) -> str | None:
    """The key of `key`'s name under another section, when one stands out: a critic setting
    placed under the actor, a rollout key under the actor. The only key of that name, or among
    several the one sharing the most leading parts with `key` (then of its depth), when it
    shares two, or one at the same depth: a common name (`name`, `enable`) is no hint.
    `keys`: the candidates (default: every key of `cfg`)."""
    name = key.rsplit(".", 1)[-1]
    parts = key.split(".")

    def rank(k: str) -> tuple[int, bool]:
        other = k.split(".")
        shared = next((i for i, (a, b) in enumerate(zip(other, parts)) if a != b), min(len(parts), len(other)))
        return shared, len(other) == len(parts)

    found = sorted(
        (rank(k), k) for k in (all_keys(cfg) if keys is None else keys) if k.rsplit(".", 1)[-1] == name and k != key
    )
    if not found or (len(found) > 1 and found[-1][0] == found[-2][0]):
        return None
    (shared, same_depth), best = found[-1]
    return best if len(found) == 1 or shared >= 2 or (shared == 1 and same_depth) else None


def section_elsewhere(keys: list[str], key: str, rest: str) -> str | None:
    """The key with `key`'s `rest` (a section and what follows, `fsdp_config.param_offload`)
    under another node of the same top-level section (a critic's setting is not looked for
    under the actor): the one sharing the most leading names with `key`, the first in `keys`
    on a tie."""
    parts = key.split(".")

    def shared(k: str) -> int:
        return next((i for i, (a, b) in enumerate(zip(k.split("."), parts)) if a != b), len(parts))

    homes = [k for k in keys if k != key and k.endswith("." + rest) and shared(k)]
    return max(homes, key=shared) if homes else None


def closest_key(cfg: DictConfig, key: str) -> str | None:
    """A real key close to `key`: the same name under another section, a sibling with a
    similar name, or the same key moved."""
    elsewhere = same_name_elsewhere(cfg, key)
    if elsewhere is not None:
        return elsewhere
    parts = key.split(".")
    node = cfg
    depth = 0
    for p in parts[:-1]:
        try:
            child = node._get_node(p) if isinstance(node, DictConfig) else None
        except Exception:  # noqa: BLE001
            child = None
        if not isinstance(child, DictConfig) or child._is_none() or child._is_missing():
            break
        node = child
        depth += 1
    prefix = ".".join(parts[:depth])
    wanted = parts[depth]
    siblings = [str(k) for k in node.keys()] if isinstance(node, DictConfig) else []
    close = closest_name(wanted, siblings)
    if close is not None:
        rest = parts[depth + 1 :]
        return ".".join(([prefix] if prefix else []) + [close] + rest)
    # The same key somewhere else (moved between releases).
    suffix = "." + key
    moved = [k for k in all_keys(cfg) if k.endswith(suffix)]
    if len(moved) == 1:
        return moved[0]
    tail = ".".join(parts[-2:])
    moved = [k for k in all_keys(cfg) if k.endswith("." + tail)]
    if len(moved) == 1:
        return moved[0]
    return None


def closest_name(wanted: str, names: list[str]) -> str | None:
    """The name among `names` that `wanted` most likely misspells: of those similar enough
    (difflib, ratio >= 0.6), the one sharing the most words (`_`-separated) with it, then
    the one starting with the same word (`tensor_parallel_size` is `tensor_model_parallel_size`
    with a word left out, not `moe_tensor_parallel_size`, another size), then the most similar."""
    import difflib  # optional: only a suggestion needs it, kept out of the Hydra callback's start-up

    words = wanted.split("_")

    def rank(name: str) -> tuple:
        other = name.split("_")
        return (len(set(words) & set(other)), other[0] == words[0], difflib.SequenceMatcher(None, wanted, name).ratio())

    close = difflib.get_close_matches(wanted, names, n=8, cutoff=0.6)
    return max(close, key=rank) if close else None
