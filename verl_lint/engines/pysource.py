"""Python source of a package, read as text and parsed with `ast`: nothing is imported or run.

The engine schemas (what a vLLM / SGLang release accepts) and the assembly reader (what
verl's rollout server passes them) both read source this way.
"""

from __future__ import annotations

import ast
from pathlib import Path


class Source:
    """Read-only access to a package tree: a site-packages dir or a wheel (zip)."""

    def read(self, rel: str) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError

    def listdir(self, rel_dir: str) -> list[str]:  # pragma: no cover - interface
        raise NotImplementedError


class DirSource(Source):
    def __init__(self, root: Path):
        self.root = Path(root)

    def read(self, rel: str) -> str | None:
        try:
            return (self.root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def listdir(self, rel_dir: str) -> list[str]:
        d = self.root / rel_dir
        return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


def parse_source(text: str | None) -> ast.Module | None:
    """The module `text` parses to; None for no text or a syntax error."""
    if text is None:
        return None
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def top_classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def const_str(node: ast.AST) -> str | None:
    """The value of a string literal, else None."""
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
