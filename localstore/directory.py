"""Claiming a store directory and opening its LevelDB without ever damaging what is there.

A store directory carries a small marker file (format, version, overlay) written before the
LevelDB is created, and is locked with flock on that marker for the store's lifetime (LevelDB's
own LOCK is lost when one process opens a directory twice). A directory without the marker is
refused before LevelDB touches it, and a failed open of one of ours is undone (LevelDB rotates
its LOG even when it fails), so a foreign, corrupt or locked directory is left byte-identical.

One kind of damage to our own LevelDB is repaired instead: a lost or garbled ``CURRENT`` or
``MANIFEST`` (what a power cut can leave of the file that names the live tables). Those only
describe which table and log files hold the data, so ``plyvel.repair_db``, which rebuilds them by
reading every table and log, loses nothing; it is logged at WARNING. Lost or damaged tables are
refused (a repair would silently drop the cursors and sync state they held).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import re
from collections.abc import Iterator
from typing import Any

import plyvel

from localstore.chunkfile import CHUNK_FILE_NAME
from localstore.errors import MOVE_AWAY, OverlayMismatch, StoreCorrupt, StoreLocked, UnsupportedStoreVersion

FORMAT_VERSION = 4
"""4: slots of 4,241 bytes with a 64-bit checksum each, holding up to 4,201 bytes (single-owner chunks);
3: chunk data, pull index and address index in files, LevelDB holds cursors and state;
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
_LEVELDB_RECORDS = re.compile(r"^\d+\.(log|ldb|sst)$")
# LevelDB's corruption reports about CURRENT or the MANIFEST ("descriptor"), which repair_db
# rebuilds from the tables and logs without loss; anything else (a lost or damaged table, an I/O
# error) is refused. Matched against the message with the store's path taken out.
_DESCRIPTOR_DAMAGE = re.compile(r"CURRENT|MANIFEST|descriptor")

log = logging.getLogger(__name__)


def plyvel_message(exc: BaseException) -> str:
    """A LevelDB error as one line of text."""
    arg = exc.args[0] if exc.args else exc
    text = arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)
    return " ".join(text.split())


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
    """Open (or, when the marker is fresh, create) the LevelDB, repairing a lost or garbled
    CURRENT or MANIFEST; on a failure it cannot repair, leave no trace."""
    entries = set(os.listdir(path))
    if "CURRENT" not in entries:
        if any(_LEVELDB_RECORDS.match(name) for name in entries):
            return _repair_and_open(path, "its CURRENT file is missing")
        if CHUNK_FILE_NAME in entries and os.path.getsize(os.path.join(path, CHUNK_FILE_NAME)):
            found = sorted(name for name in entries if _LEVELDB_DATA.match(name) or name == CHUNK_FILE_NAME)
            raise StoreCorrupt(
                path,
                f"the LevelDB CURRENT file is missing and no table or log is left to repair it from "
                f"(found {found}); {MOVE_AWAY}",
            )
        # A new store (or one whose creation stopped before LevelDB wrote anything to keep).
        return plyvel.DB(path, create_if_missing=True, **LEVELDB_OPTIONS)
    try:
        with _undo_failed_open(path):
            return _open_existing(path)
    except _DescriptorDamaged as exc:
        return _repair_and_open(path, exc.problem)
    except StoreCorrupt as exc:
        raise StoreCorrupt(path, f"{exc.problem}; {MOVE_AWAY}") from exc


class _DescriptorDamaged(StoreCorrupt):
    """LevelDB reports its CURRENT or MANIFEST corrupt or missing: repair_db rebuilds them."""


def _open_existing(path: str) -> plyvel.DB:
    try:
        return plyvel.DB(path, create_if_missing=False, **LEVELDB_OPTIONS)
    except plyvel.CorruptionError as exc:
        message = plyvel_message(exc)
        damaged = _DescriptorDamaged if _DESCRIPTOR_DAMAGE.search(message.replace(path, "")) else StoreCorrupt
        raise damaged(path, f"LevelDB cannot open it: {message}") from exc
    except plyvel.IOError as exc:
        message = plyvel_message(exc)
        if "LOCK" in message:
            raise StoreLocked(path, message) from exc
        raise StoreCorrupt(path, f"LevelDB cannot open it: {message}") from exc
    except plyvel.Error as exc:
        raise StoreCorrupt(path, f"LevelDB cannot open it: {plyvel_message(exc)}") from exc


def _repair_and_open(path: str, problem: str) -> plyvel.DB:
    """Rebuild the LevelDB's CURRENT and MANIFEST from its tables and logs, then open it."""
    log.warning(
        "store %s: %s; repairing the LevelDB with plyvel.repair_db (files it cannot use go to %s)",
        path,
        problem,
        os.path.join(path, "lost"),
    )
    try:
        plyvel.repair_db(path, **LEVELDB_OPTIONS)
    except plyvel.Error as exc:
        raise StoreCorrupt(path, f"LevelDB repair failed: {plyvel_message(exc)}; {MOVE_AWAY}") from exc
    try:
        db = _open_existing(path)
    except StoreCorrupt as exc:
        raise StoreCorrupt(path, f"{exc.problem} (after a repair); {MOVE_AWAY}") from exc
    log.warning("store %s: the LevelDB is repaired", path)
    return db


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
