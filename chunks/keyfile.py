"""Secret files readable by their owner only: create one (never overwriting), read one back.

What any key file of the project needs, whatever the key: created with mode 0600 and O_EXCL (an
existing file is never replaced; a half-written one is removed), fsynced; refused on reading if
group or others may access it (as ssh refuses such keys) or if it is not a regular file.
`chunks.ethkey` keeps secp256k1 keys in one; the node identity's Ed25519 seed
(`streamer.identity`) follows the same rules.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

__all__ = ["KeyFileError", "create_owner_only", "read_owner_only"]


class KeyFileError(Exception):
    """A key file that cannot be used: missing, unsafe permissions, not a regular file, bad content."""


def create_owner_only(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to a new file at ``path`` with mode 0600; FileExistsError if there is one."""
    path = Path(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        try:
            while data:
                data = data[os.write(fd, data) :]
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        path.unlink()  # ours (O_EXCL): never leave a half-written key behind
        raise
    if os.name == "posix":  # make the new directory entry durable too
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            with contextlib.suppress(OSError):
                os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def read_owner_only(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most ``limit`` bytes of the file at ``path``, if only its owner may access it."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise KeyFileError(f"cannot open key file {path}: {exc.strerror}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise KeyFileError(f"key file {path} is not a regular file")
        if os.name == "posix" and st.st_mode & 0o077:
            raise KeyFileError(
                f"key file {path} is accessible by group/others (mode {stat.S_IMODE(st.st_mode):#o}); "
                f"refusing to use it: run `chmod 600 {path}`"
            )
        data = b""
        while len(data) < limit and (more := os.read(fd, limit - len(data))):
            data += more
        return data
    finally:
        os.close(fd)
