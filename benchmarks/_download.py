"""Fetch a pinned PyPI package with ``pip download --no-deps`` and unpack it: for benchmarks.

    from _download import fetch_package
    tree = fetch_package("tflearn", "0.5.0", Path("benchmarks/corpus-data"))

Layout under ``data`` (gitignored: public code is never committed):
``dl/`` holds the archives pip downloaded, ``trees/<name>-<version>/`` the
unpacked files. An archive or tree already there is reused, so a second run
needs no network. A tree is unpacked into a temporary folder and renamed into
place, so an interrupted run leaves no half-unpacked tree behind. Nothing here
imports TensorFlow.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path
from typing import Optional

ARCHIVE_SUFFIXES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2")


class DownloadError(RuntimeError):
    """pip could not fetch the package, or what it fetched cannot be unpacked."""


def _stem(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def find_archive(dl: Path, name: str, version: str) -> Optional[Path]:
    """The archive of ``name==version`` already in ``dl`` (wheel or sdist; pip
    spells the name with ``-`` or ``_``), or None."""
    if not dl.is_dir():
        return None
    prefix = _stem(f"{name}-{version}")
    found = sorted(p for p in dl.iterdir()
                   if p.name.endswith(ARCHIVE_SUFFIXES)
                   and _stem(p.name).startswith(prefix)
                   and _stem(p.name)[len(prefix):len(prefix) + 1] in ("_", ""))
    wheels = [p for p in found if p.suffix == ".whl"]
    return (wheels or found or [None])[0]


def download(name: str, version: str, dl: Path) -> Path:
    """``pip download --no-deps name==version -d dl`` unless the archive is there."""
    archive = find_archive(dl, name, version)
    if archive is not None:
        return archive
    dl.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
           f"{name}=={version}", "-d", str(dl)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    archive = find_archive(dl, name, version)
    if proc.returncode != 0 or archive is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise DownloadError(f"pip download {name}=={version} failed (exit {proc.returncode}): "
                            + " | ".join(tail))
    return archive


def _extract(archive: Path, into: Path) -> None:
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z:
            for member in z.namelist():  # no absolute paths or .. escapes
                target = (into / member).resolve()
                if not str(target).startswith(str(into.resolve()) + os.sep):
                    raise DownloadError(f"{archive}: member {member!r} escapes the folder")
            z.extractall(into)
    else:
        with tarfile.open(archive) as t:
            t.extractall(into, filter="data")


def unpack(archive: Path, dest: Path) -> Path:
    """Unpack ``archive`` (wheel, zip or tarball) into ``dest``, atomically."""
    if dest.exists():
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        _extract(archive, tmp)
        try:
            os.replace(tmp, dest)
        except OSError as exc:
            if not dest.is_dir():  # else another benchmark unpacked it first: use that tree
                raise DownloadError(f"cannot move the unpacked {archive} to {dest}: {exc}") from exc
    except (zipfile.BadZipFile, tarfile.TarError, OSError) as exc:
        raise DownloadError(f"cannot unpack {archive}: {exc}") from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def fetch_package(name: str, version: str, data: Path) -> Path:
    """Download (if needed) and unpack (if needed) ``name==version``; the tree's path."""
    archive = download(name, version, data / "dl")
    return unpack(archive, data / "trees" / f"{name}-{version}")
