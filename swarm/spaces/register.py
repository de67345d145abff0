"""The shared map of a space: a last-writer-wins register per key (pure).

"Last" means last in the total order: of all ``set`` messages for a key, the one with the
greatest `OrderKey` wins. Order keys grow along causality, so a write that saw another always
beats it; concurrent writes are settled by the tie-break, alike on every reader. The map is
therefore a function of the set of messages processed, not of the order they were processed
in: readers in ``causal`` mode, which process concurrent messages in different orders, and
readers in ``total`` mode agree once they hold the same messages. (Applying writes "in processing
order" would not converge in causal mode.) An empty value clears the key.

`document` and `canonical_bytes` are how the state is shown: keys sorted, JSON without spaces,
UTF-8, so two readers with the same messages print byte-identical states.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from swarm.spaces.timeframe import OrderKey

__all__ = ["LwwMap", "Register"]


@dataclass(frozen=True, slots=True)
class Register:
    value: str
    key: OrderKey

    @property
    def writer(self) -> bytes:
        return self.key.owner


class LwwMap:
    """Keys to the value of the write that sorts last."""

    def __init__(self) -> None:
        self._registers: dict[str, Register] = {}
        self.writes = 0

    def apply(self, name: str, value: str, key: OrderKey) -> bool:
        """A write of ``value`` to ``name`` at ``key``; True if it is now the winning one."""
        self.writes += 1
        current = self._registers.get(name)
        if current is not None and not key > current.key:
            return False
        self._registers[name] = Register(value, key)
        return True

    def get(self, name: str) -> str | None:
        register = self._registers.get(name)
        return register.value if register is not None and register.value else None

    def items(self) -> list[tuple[str, Register]]:
        """The keys that hold a value (cleared ones left out), sorted."""
        return sorted((name, r) for name, r in self._registers.items() if r.value)

    def __len__(self) -> int:
        return len(self.items())

    def document(self) -> dict[str, Any]:
        return {
            name: {"value": r.value, "writer": r.writer.hex(), "seq": r.key.seq} for name, r in self.items()
        }

    def canonical_bytes(self) -> bytes:
        return json.dumps(self.document(), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
