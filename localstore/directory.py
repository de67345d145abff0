"""Claiming a store directory and opening its LevelDB without ever damaging what is there.

A store directory carries a small marker file (format, version, overlay) written before the
LevelDB is created, and is locked with flock on that marker for the store's lifetime (LevelDB's
own LOCK is lost when one process opens a directory twice). A directory without the marker is
refused before LevelDB touches it, and a failed open of one of ours is undone (LevelDB rotates
its LOG even when it fails), so a foreign, corrupt or locked directory is left byte-identical.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
from collections.abc import Iterator
from typing import Any

import plyvel

from localstore.chunkfile import CHUNK_FILE_NAME
from localstore.errors import OverlayMismatch, StoreCorrupt, StoreLocked, UnsupportedStoreVersion

FORMAT_VERSION = 3
"""3: chunk data, pull index and address index in files, LevelDB holds cursors and state;
2: chunk data in the slot file CHUNKS, its index in LevelDB; 1: chunk data inside LevelDB."""

# LevelDB holds only the metadata, the bin cursors and other components' state (interval sets):
# small, so small memtables, tables and block cache suffice (docs/performance.md).
LEVELDB_OPTIONS: dict[str, int] = {
    "bloom_filter_bits": 20,
    "write_buffer_size": 2 << 20,
    "max_file_size": 2 << 20,
    "lru_cache_size": 1 << 20,
}

MARKER_NAME = "LOCALSTORE"
MARKER_FORMAT = "swarm-sync localstore"
# Files LevelDB creates before it has stored anything; any other LevelDB file means data.
_LEVELDB_HOUSEKEEPING = frozenset({"LOCK", "LOG", "LOG.old"})
_LEVELDB_DATA = re.compile(r"^(CURRENT|MANIFEST-\d+|\d+\.(log|ldb|sst|dbtmp))$")


def plyvel_message(exc: BaseException) -> str:
    arg = exc.args[0] if exc.args else exc
    return arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)


def claim_directory(path: str, overlay: bytes) -> int:
    """Create or recognise the store directory and lock it; return the lock's file descriptor.

    Nothing in an existing directory is created or changed unless it carries our marker.
    """
    if os.path.lexists(path) and not os.path.isdir(path):
        raise StoreCorrupt(path, "it exists and is not a directory")
    os.makedirs(path, exist_ok=True)
    marker = os.path.join(path, MARKER_NAME)
    entries = set(os.listdir(path))
    if MARKER_NAME not in entries and entries:
        if "CURRENT" in entries:
            raise StoreCorrupt(path, f"it is a LevelDB without localstore metadata ({MARKER_NAME} missing)")
        raise StoreCorrupt(path, "it is a non-empty directory that is not a LevelDB")
    try:
        fd = os.open(marker, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        fd = os.open(marker, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreLocked(path) from exc
            raise
        content = os.read(fd, 1 << 16)
        if content:
            _check_marker(path, content, overlay)
        else:
            _write_marker(path, marker, overlay)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_marker(path: str, content: bytes, overlay: bytes) -> None:
    try:
        fields: Any = json.loads(content)
        if not isinstance(fields, dict) or fields.get("format") != MARKER_FORMAT:
            raise ValueError("not a localstore marker")
        version = fields["version"]
        stored = bytes.fromhex(fields["overlay"]) if version == FORMAT_VERSION else b""
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreCorrupt(path, f"{MARKER_NAME} marker is unreadable ({exc})") from exc
    if version != FORMAT_VERSION:
        raise UnsupportedStoreVersion(path, version, FORMAT_VERSION)
    if stored != overlay:
        raise OverlayMismatch(path, stored, overlay)


def _write_marker(path: str, marker: str, overlay: bytes) -> None:
    """Fill the (empty, locked) marker of a store being created; refuse if LevelDB data exists."""
    leftovers = set(os.listdir(path)) - _LEVELDB_HOUSEKEEPING - {MARKER_NAME}
    if leftovers:
        raise StoreCorrupt(path, f"{MARKER_NAME} marker is empty but the directory holds {sorted(leftovers)}")
    content = json.dumps({"format": MARKER_FORMAT, "version": FORMAT_VERSION, "overlay": overlay.hex()})
    wfd = os.open(marker, os.O_WRONLY)
    try:
        os.write(wfd, content.encode() + b"\n")
        os.fsync(wfd)
    finally:
        os.close(wfd)
    dfd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def open_leveldb(path: str) -> plyvel.DB:
    """Open (or, when the marker is fresh, create) the LevelDB; on failure leave no trace."""
    entries = set(os.listdir(path))
    if "CURRENT" not in entries:
        data = {name for name in entries if _LEVELDB_DATA.match(name)}
        if CHUNK_FILE_NAME in entries and os.path.getsize(os.path.join(path, CHUNK_FILE_NAME)):
            data.add(CHUNK_FILE_NAME)
        if data:
            raise StoreCorrupt(path, f"the LevelDB CURRENT file is missing (found {sorted(data)})")
        return plyvel.DB(path, create_if_missing=True, **LEVELDB_OPTIONS)
    with _undo_failed_open(path):
        try:
            return plyvel.DB(path, create_if_missing=False, **LEVELDB_OPTIONS)
        except plyvel.IOError as exc:
            message = plyvel_message(exc)
            if "LOCK" in message:
                raise StoreLocked(path, message) from exc
            raise StoreCorrupt(path, f"LevelDB cannot open it: {message}") from exc
        except plyvel.Error as exc:
            raise StoreCorrupt(path, f"LevelDB cannot open it: {plyvel_message(exc)}") from exc


@contextlib.contextmanager
def _undo_failed_open(path: str) -> Iterator[None]:
    """Restore the directory if opening fails.

    Even a failed LevelDB open renames LOG to LOG.old and starts a new LOG (before it takes
    its LOCK). On failure: put the original LOG back, rewrite the previous LOG.old from a
    copy, and remove whatever files the attempt created.
    """
    log, log_old = os.path.join(path, "LOG"), os.path.join(path, "LOG.old")
    before = set(os.listdir(path))
    log_inode = os.stat(log).st_ino if "LOG" in before else None
    saved_old: tuple[bytes, os.stat_result] | None = None
    if "LOG.old" in before:
        with open(log_old, "rb") as file:
            saved_old = (file.read(), os.fstat(file.fileno()))
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            if log_inode is not None and os.stat(log_old).st_ino == log_inode:
                os.replace(log_old, log)
        if saved_old is not None and not os.path.exists(log_old):
            data, stat = saved_old
            with contextlib.suppress(OSError), open(log_old, "wb") as file:
                file.write(data)
            with contextlib.suppress(OSError):
                os.utime(log_old, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        with contextlib.suppress(OSError):
            for name in set(os.listdir(path)) - before:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(path, name))
        raise
