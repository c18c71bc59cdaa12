"""Facts about the installed Python environment, read without importing the packages."""

from __future__ import annotations

import importlib.util
from functools import lru_cache
from importlib import metadata
from pathlib import Path

# Distribution name -> the version key rules read from `Context.versions`.
TRACKED = {
    "torch": "torch",
    "torch-npu": "torch_npu",
    "vllm": "vllm",
    "vllm-ascend": "vllm_ascend",
    "sglang": "sglang",
    "torch-memory-saver": "torch_memory_saver",
}


@lru_cache(maxsize=None)
def installed_version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def installed_versions() -> dict[str, str]:
    """{version key: version} of the tracked packages that are installed."""
    out = {}
    for dist, key in TRACKED.items():
        v = installed_version(dist)
        if v is not None:
            out[key] = v
    return out


@lru_cache(maxsize=None)
def package_dir(top: str) -> Path | None:
    """The directory of an installed top-level package; `find_spec` of a top-level name does not import it."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])
