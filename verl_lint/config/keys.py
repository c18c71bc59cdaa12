"""The keys of a composed config: listing them, and the real key closest to a misspelt or moved one."""

from __future__ import annotations

from omegaconf import DictConfig


def all_keys(cfg, prefix: str = "") -> list[str]:
    """Every dotted key of `cfg`, parents before their children (a node it cannot read is skipped)."""
    out = []
    if isinstance(cfg, DictConfig):
        for k in cfg.keys():
            full = f"{prefix}.{k}" if prefix else str(k)
            out.append(full)
            try:
                child = cfg._get_node(k)
            except Exception:  # noqa: BLE001
                continue
            if isinstance(child, DictConfig) and not child._is_missing() and not child._is_none() and not child._is_interpolation():
                out.extend(all_keys(child, full))
    return out


def closest_key(cfg: DictConfig, key: str) -> str | None:
    """A real key close to `key`: a sibling with a similar name, or the same key moved."""
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
    import difflib  # optional: only a suggestion needs it, kept out of the Hydra callback's start-up

    close = difflib.get_close_matches(wanted, siblings, n=1, cutoff=0.6)
    if close:
        rest = parts[depth + 1 :]
        return ".".join(([prefix] if prefix else []) + [close[0]] + rest)
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
