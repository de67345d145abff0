"""A reserve's capacity: chunks, or a size of disk (``4GiB``), and the default.

Apart from localstore/reserve.py so that the command line can parse ``--capacity`` without
loading the store.
"""

from __future__ import annotations

import re

from localstore.chunkfile import SLOT_SIZE

__all__ = ["DEFAULT_CAPACITY", "parse_capacity"]

DEFAULT_CAPACITY = 1 << 20
"""Chunks a node keeps unless told otherwise: 2**20, about 4.4 GB of slots (Bee keeps 2**22)."""

_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 1 << 10,
    "mib": 1 << 20,
    "gib": 1 << 30,
    "tib": 1 << 40,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_capacity(text: str) -> int:
    """A capacity in chunks: a plain number is chunks, a number with a unit (``4GiB``, ``500MB``,
    ``1.5TB``) is bytes of disk, divided by the slot size (4,241 bytes a chunk). ValueError with
    a message saying what is accepted."""
    match = _SIZE.match(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(f"capacity {text!r} is neither a number of chunks nor a size like 4GiB or 500MB")
    if not unit and "." in match.group(1):
        raise ValueError(f"capacity {text!r}: a number of chunks is a whole number")
    number = float(match.group(1))
    chunks = int(number) if not unit else int(number * _UNITS[unit]) // SLOT_SIZE
    if chunks < 1:
        raise ValueError(f"capacity {text!r} holds no chunk (a chunk takes {SLOT_SIZE} bytes)")
    return chunks
