"""Facts about the installed Python environment, read without importing the packages."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from functools import cache
from pathlib import Path

# Distribution name -> the version key rules read from `Context.versions`.
TRACKED = {
    "torch": "torch",
    "torch-npu": "torch_npu",
    "vllm": "vllm",
    "vllm-ascend": "vllm_ascend",
    "sglang": "sglang",
    "torch-memory-saver": "torch_memory_saver",
    "megatron-core": "megatron_core",
}


class MissingTable(RuntimeError):
    """A knowledge table verl-lint ships is not installed: a broken installation."""


def _normalize(name: str) -> str:
    """A distribution name as installers spell it in metadata directory names (PEP 503, `_`)."""
    return re.sub(r"[-_.]+", "_", name).lower()


@cache
def _metadata_dirs(entry: str) -> tuple[tuple[str, str, str], ...]:
    """(normalized name, version or '', suffix) of each `*.dist-info` / `*.egg-info` in a sys.path entry."""
    try:
        names = os.listdir(entry or ".")
    except OSError:
        return ()
    out = []
    for n in names:
        stem, dot, suffix = n.rpartition(".")
        if dot and suffix == "dist-info":
            name, _, version = stem.rpartition("-")  # `<name>-<version>`: a version has no `-`
            out.append((_normalize(name), version, suffix))
        elif dot and suffix == "egg-info":  # `<name>[-<version>[-pyX.Y]]`
            out.append((_normalize(stem.partition("-")[0]), "", suffix))
    return tuple(out)


@cache
def installed_version(dist: str) -> str | None:
    """The version of the distribution `dist` on sys.path, or None when it is not installed.

    Read, like `importlib.metadata.version`, from the first metadata directory for `dist` along
    sys.path, but from its name: installers write `<name>-<version>.dist-info` (the wheel and
    installed-project specs). Importing `importlib.metadata` and parsing METADATA costs more
    than the whole lint in the Hydra callback. An egg-info (its name need not carry the
    version) is left to `importlib.metadata`."""
    want = _normalize(dist)
    for entry in sys.path:
        for name, version, _suffix in _metadata_dirs(entry):
            if name != want:
                continue
            if version:
                return version
            from importlib import metadata  # ~10 ms, only for a dist-info without a version in its name

            try:
                return metadata.version(dist)
            except metadata.PackageNotFoundError:
                return None
    return None


def installed_versions() -> dict[str, str]:
    """{version key: version} of the tracked packages that are installed."""
    out = {}
    for dist, key in TRACKED.items():
        v = installed_version(dist)
        if v is not None:
            out[key] = v
    return out


@cache
def package_dir(top: str) -> Path | None:
    """The directory of an installed top-level package; `find_spec` of a top-level name does not import it."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])
