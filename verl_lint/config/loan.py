"""A composed base lent to one launch instead of copied, and put back after it (`Composer.lending`).

Unpickling a fresh copy of the base for every launch was a third of composing one. A launch's
overrides change only a few nodes: each is recorded before Hydra applies it, and putting the
recorded contents back restores the very objects the base had.
"""

from __future__ import annotations

import copy
from typing import Any

from omegaconf import Container, DictConfig, ListConfig
from omegaconf._utils import split_key


class Loan:
    """A base lent to one launch (`Composer.lending`) and how to put it back: before each
    override, the container its key changes is recorded (its content, shallow) and the node there
    is replaced by a copy for the override to change, so that putting back the recorded contents
    restores the very objects the base had. A key whose change cannot be told in advance (a
    missing, None or interpolated node on its path, or a key OmegaConf converts) marks the loan
    spoilt: the base is then unpickled again for the next launch."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.cfg: DictConfig | None = None
        self.saved: list[tuple[Container, Any, Any]] = []  # (container, its content, the original node or None)
        self.spoilt = False
        self.resolved: dict = {}

    def take(self, key: tuple, cfg: DictConfig) -> None:
        self.key, self.cfg = key, cfg
        # what resolvers with a cache (`${now:...}`) have stored on the root
        self.resolved = {name: dict(values) for name, values in cfg._metadata.resolver_cache.items()}

    def before(self, key: str, deleting: bool) -> None:
        """Record what an override of `key` may change (a delete leaves its node as it is)."""
        node: Any = self.cfg
        parts = split_key(key)
        for i, part in enumerate(parts):
            content = node.__dict__["_content"]
            if isinstance(node, DictConfig) and isinstance(content, dict) and part:
                child = content.get(part)
                if child is None and node._metadata.key_type not in (Any, str):
                    break  # OmegaConf may convert the key to one that is there
                at: Any = part
            elif (
                isinstance(node, ListConfig)
                and isinstance(content, list)
                and part.isdigit()
                and int(part) < len(content)
            ):
                at = int(part)
                child = content[at]
            else:
                break
            if i < len(parts) - 1 and isinstance(child, Container):
                if isinstance(child.__dict__["_content"], (dict, list)):
                    node = child
                    continue
                break  # a None, missing or interpolated section on the way: the change may land elsewhere
            self.saved.append((node, copy.copy(content), child))
            if child is not None and not deleting:
                content[at] = _twin(child)  # the override changes this copy
            return
        self.spoilt = True

    def put_back(self) -> bool:
        """Restore the base as it was lent; False when the loan is spoilt."""
        if self.spoilt:
            return False
        for node, content, original in reversed(self.saved):
            node.__dict__["_content"] = content
            if original is not None:
                _forget_flags(original)
        if self.cfg is not None:
            cache = self.cfg._metadata.resolver_cache
            cache.clear()
            cache.update(self.resolved)
        return True


def _twin(node):
    """A copy of `node` under the same parent. A value node is changed in place only in its value
    (`_set_value`), so its copy shares the value and copies the metadata one level (its flags);
    a container is copied whole."""
    if isinstance(node, Container):
        return copy.deepcopy(node)  # the parent is kept, not copied
    twin = copy.copy(node)
    meta = twin.__dict__["_metadata"] = copy.copy(node._metadata)
    if meta.flags:
        meta.flags = dict(meta.flags)
    return twin


def _forget_flags(node) -> None:
    """Clear the flag caches of `node` and everything under it. A node out of the tree while a
    launch changed its ancestors' flags (`open_dict`) missed their invalidation, and OmegaConf
    only invalidates a subtree below a node whose own cache is set."""
    todo = [node]
    while todo:
        n = todo.pop()
        n.__dict__["_flags_cache"] = None
        content = n.__dict__.get("_content")
        if isinstance(content, dict):
            todo.extend(content.values())
        elif isinstance(content, list):
            todo.extend(content)
