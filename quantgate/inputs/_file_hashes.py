"""sha256 of model files, cached by (resolved path, mtime, size).

Hashing a 500 MB GGUF takes seconds, so the result is kept in `sha256.json` in the user cache
directory (`QUANTGATE_SHA256_CACHE` names another file) while the file keeps its mtime and size.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError

HASH_CACHE_ENV = "QUANTGATE_SHA256_CACHE"
"""Environment variable: the path of the sha256 cache file, instead of the user cache directory's."""


class Sha256CacheEntry(BaseModel):
    """One hashed file: valid while the file keeps its mtime and size."""

    model_config = ConfigDict(extra="forbid")

    mtime_ns: int
    size: int
    sha256: str


class Sha256Cache(BaseModel):
    """The sha256 cache file (`sha256.json`): model files already hashed, by resolved path."""

    model_config = ConfigDict(extra="forbid")

    format_version: Literal[1] = 1
    files: dict[str, Sha256CacheEntry] = Field(default_factory=dict)


def default_hash_cache() -> Path:
    """Where sha256 hashes are cached: `$QUANTGATE_SHA256_CACHE`, else the user cache directory's
    `quantgate/sha256.json` (beside the ladder)."""
    override = os.environ.get(HASH_CACHE_ENV)
    return Path(override) if override else platformdirs.user_cache_path("quantgate") / "sha256.json"


def _read_cache(cache_file: Path) -> Sha256Cache:
    """The cache; an absent, unreadable or invalid one is empty (it is rebuilt, never an error)."""
    try:
        return Sha256Cache.model_validate_json(cache_file.read_bytes())
    except (OSError, ValidationError):
        return Sha256Cache()


def _write_cache(cache_file: Path, cache: Sha256Cache) -> None:
    """Write the cache atomically, dropping files that are gone; a cache that cannot be written is skipped."""
    kept = {path: entry for path, entry in cache.files.items() if os.path.isfile(path)}
    partial = cache_file.with_name(f"{cache_file.name}.{os.getpid()}.partial")
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(Sha256Cache(files=kept).model_dump_json(indent=1), encoding="utf-8")
        os.replace(partial, cache_file)
    except OSError:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)


def _hash_file(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def file_sha256(path: Path, *, cache_file: Path | None = None) -> str:
    """The sha256 of a file, from the cache while the file keeps its mtime and size.

    Args:
        path: The file.
        cache_file: The cache (default: `default_hash_cache()`).
    """
    cache_file = cache_file or default_hash_cache()
    resolved = path.resolve()
    before = resolved.stat()
    cache = _read_cache(cache_file)
    entry = cache.files.get(str(resolved))
    if entry is not None and (entry.mtime_ns, entry.size) == (before.st_mtime_ns, before.st_size):
        return entry.sha256
    digest = _hash_file(resolved)
    after = resolved.stat()
    if (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns, before.st_size):  # not written meanwhile
        cache = _read_cache(cache_file)  # another process may have added files while this one hashed
        cache.files[str(resolved)] = Sha256CacheEntry(
            mtime_ns=before.st_mtime_ns, size=before.st_size, sha256=digest
        )
        _write_cache(cache_file, cache)
    return digest
