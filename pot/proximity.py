"""Proximity order: how many leading bits two addresses share.

This is the metric of the whole network (Kademlia bins, neighbourhoods, sync bins), and it sits on hot
paths, so it is one integer XOR and a ``bit_length`` rather than a loop over bytes.
"""

from __future__ import annotations

__all__ = ["MAX_PO", "proximity"]

MAX_PO = 31
"""The deepest bin: peers and chunks at least this close share bin ``MAX_PO``. Kademlia bins and each
store's pull-index bins are numbered ``0..MAX_PO``.

The reference caps bins at 31 (``swarm.MaxPO``); the pot itself works on full addresses and never caps.
It is defined here, at the bottom of the stack, because every layer that bins addresses (kademlia, the
localstore's pull index, the stream messages, the sync intervals) may import ``pot`` and nothing above it.
"""


def proximity(a: bytes, b: bytes) -> int:
    """Return the number of leading bits ``a`` and ``b`` share, most significant bit of byte 0 first.

    Equal addresses give ``len(a) * 8``. Addresses of different lengths have no proximity order:
    ``ValueError``.
    """
    nbytes = len(a)
    if nbytes != len(b):
        raise ValueError(f"proximity of addresses of different lengths: {nbytes} and {len(b)} bytes")
    return nbytes * 8 - (int.from_bytes(a) ^ int.from_bytes(b)).bit_length()
