"""Declaring a wire message once, and deriving the rest from its declaration.

::

    @message(0x16)
    class ChunkDelivery(Message):
        bin: Bin
        live: Bool
        start: BinId
        index: OfferIndex
        data: ChunkData

makes a frozen dataclass (with slots) whose ``__post_init__`` checks every field by its kind
(streamer/wire/fields.py) and then runs the class's own ``_check`` (constraints between fields),
if it has one; sets its wire type code ``TYPE``; and derives its body's layout
(streamer/wire/layout.py) into ``_layout``, unless the class writes and reads its body itself
(a ``_write`` method and a ``_read`` class method). A class with its own ``__repr__`` keeps it.
:func:`record` does the same for a value carried inside messages (no type code).
streamer/wire/registry.py collects the messages of every sub-protocol module
(:func:`declared_in`).
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import (
    Annotated,
    Any,
    ClassVar,
    TypeVar,
    dataclass_transform,
    get_args,
    get_origin,
    get_type_hints,
)

from streamer.wire.fields import Field
from streamer.wire.layout import Layout, derive, hand_written

T = TypeVar("T")
M = TypeVar("M", bound="Message")


class Message:
    """A wire message: a value that validates every field. Constructing one with a field out of
    range raises MessageError naming the message and the field, so a message that exists is
    encodable. ``TYPE`` is its type code on the wire."""

    __slots__ = ()
    TYPE: ClassVar[int]
    _layout: ClassVar[Layout]


@dataclass_transform(frozen_default=True)
def message(code: int, *, fieldwise: bool = False) -> Callable[[type[M]], type[M]]:
    """Declare a message of type ``code``; ``fieldwise``: see streamer/wire/layout.py."""

    def declare(cls: type[M]) -> type[M]:
        if not issubclass(cls, Message):
            raise TypeError(f"{cls.__name__} is declared a message but is not a Message")
        declared = _declare(cls, fieldwise)
        declared.TYPE = code
        return declared

    return declare


@dataclass_transform(frozen_default=True)
def record(cls: type[T]) -> type[T]:
    """Declare a value carried inside messages (a signed state, a peer record)."""
    return _declare(cls, False)


def declared_in(module: types.ModuleType) -> tuple[type[Message], ...]:
    """The messages declared in ``module``, in the order of their declarations."""
    return tuple(
        value
        for value in vars(module).values()
        if isinstance(value, type) and issubclass(value, Message) and value.__module__ == module.__name__
    )


def _declare(cls: type[T], fieldwise: bool) -> type[T]:
    if "__post_init__" in vars(cls):
        raise TypeError(f"{cls.__name__}: checks between fields go in _check, not __post_init__")
    kinds = _kinds(cls)
    checks = tuple((name, kind.check) for name, kind in kinds.items() if kind is not None)
    setattr(cls, "__post_init__", _post_init(cls.__name__, checks, vars(cls).get("_check")))  # noqa: B010
    declared = dataclass(frozen=True, slots=True, repr="__repr__" not in vars(cls))(cls)
    if "_read" in vars(cls):
        layout = hand_written(declared)
    else:
        missing = [name for name, kind in kinds.items() if kind is None]
        if missing:
            raise TypeError(f"{cls.__name__}.{missing[0]} has no field kind to derive the body from")
        layout = derive(
            declared, [(name, kind) for name, kind in kinds.items() if kind is not None], fieldwise=fieldwise
        )
    setattr(declared, "_layout", layout)  # noqa: B010
    return declared


def _kinds(cls: type) -> dict[str, Field | None]:
    """Each field of ``cls`` (its own annotations, in order) and its kind, if annotated with one."""
    hints = get_type_hints(cls, include_extras=True)
    kinds: dict[str, Field | None] = {}
    for name in vars(cls).get("__annotations__", {}):
        hint = hints[name]
        found = (
            [m for m in get_args(hint)[1:] if isinstance(m, Field)] if get_origin(hint) is Annotated else []
        )
        kinds[name] = found[0] if found else None
    return kinds


def _post_init(owner: str, checks: tuple[tuple[str, Callable[[str, str, Any], Any]], ...], extra: Any) -> Any:
    set_field = object.__setattr__

    def __post_init__(self: Any) -> None:
        for name, check in checks:
            value = getattr(self, name)
            checked = check(owner, name, value)
            if checked is not value:
                set_field(self, name, checked)
        if extra is not None:
            extra(self)

    return __post_init__
