"""Engine wheels from the package index, read straight from the zip: what
scripts/make_engine_schemas.py builds the bundled snapshots from (the linter itself never
downloads an engine)."""

from __future__ import annotations

import zipfile
from pathlib import Path

from ..cache import cache_dir, make_dir
from ..download import DownloadError, wheel
from .pysource import Source


class WheelSource(Source):
    """The `.py` members of a wheel, read straight from the zip (nothing is unpacked or imported)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        with zipfile.ZipFile(self.path) as zf:
            self._members = {i.filename: i for i in zf.infolist()}
        self._zf = zipfile.ZipFile(self.path)

    def read(self, rel: str) -> str | None:
        if rel not in self._members:
            return None
        return self._zf.read(rel).decode("utf-8", errors="replace")

    def listdir(self, rel_dir: str) -> list[str]:
        prefix = rel_dir.rstrip("/") + "/"
        return sorted({n[len(prefix) :].split("/", 1)[0] for n in self._members if n.startswith(prefix)})

    def close(self) -> None:
        self._zf.close()


def fetch_wheel(dist: str, version: str, dest: Path | None = None) -> Path:
    """The wheel of dist==version from the package index, downloaded once without dependencies
    into `dest` (default: <cache>/wheels; see download.py). Raises download.DownloadError (a
    RuntimeError) when it cannot be downloaded."""
    dest = Path(dest) if dest else cache_dir() / "wheels"
    try:
        make_dir(dest)
    except OSError as ex:
        raise DownloadError(f"cannot download {dist} {version}: cannot create {dest} ({ex.strerror or ex})") from None
    return wheel(dist, version, dest)
