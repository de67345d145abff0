"""Declaring a wire message once, and deriving the rest from its declaration.

::

    @message(0x16)
    class ChunkDelivery(Message):
        bin: Bin
        live: Bool
        start: BinId
        index: OfferIndex
        data: ChunkData

makes a frozen dataclass (with slots) whose ``__init__`` checks every field by its kind
(streamer/wire/fields.py) and then runs the class's own ``_check`` (constraints between fields),
if it has one; sets its wire type code ``TYPE``; and derives its body's layout
(streamer/wire/layout.py) into ``_layout``, unless the class writes and reads its body itself
(a ``_write`` method and a ``_read`` class method). A class with its own ``__repr__`` keeps it.
:func:`record` does the same for a value carried inside messages (no type code).
streamer/wire/registry.py collects the messages of every sub-protocol module
(:func:`declared_in`).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from operator import attrgetter
from typing import (
    Annotated,
    Any,
    ClassVar,
    TypeVar,
    dataclass_transform,
    get_args,
    get_origin,
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
    own_repr = "__repr__" in vars(cls)
    # dataclasses keeps the fields (fields(), replace()), freezes the instances and adds the slots;
    # the methods it would write one compile each (its largest cost: about 0.5 ms a class, in
    # every process at start-up) are made here: __init__ in one compile, with the checks inline
    # (what __post_init__ did), and equality, hashing and repr from the field names alone.
    declared = dataclass(frozen=True, slots=True, init=False, repr=False, eq=False)(cls)
    names = tuple(f.name for f in fields(declared))  # type: ignore[arg-type]
    setattr(declared, "__init__", _init(declared, kinds, vars(cls).get("_check")))  # noqa: B010
    values = _values(names)
    setattr(declared, "__eq__", _eq(values))  # noqa: B010
    setattr(declared, "__hash__", _hash(values))  # noqa: B010
    if not own_repr:
        setattr(declared, "__repr__", _repr(names))  # noqa: B010
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
    """Each field of ``cls`` (its own annotations, in order) and its kind, if annotated with one.

    The annotations are evaluated as ``typing.get_type_hints`` would (in the module's globals,
    the class's names local), without its walk of the bases and its checks of every hint."""
    namespace = sys.modules[cls.__module__].__dict__
    local = dict(vars(cls))
    kinds: dict[str, Field | None] = {}
    for name, annotation in vars(cls).get("__annotations__", {}).items():
        hint = eval(annotation, namespace, local) if isinstance(annotation, str) else annotation
        found = (
            [m for m in get_args(hint)[1:] if isinstance(m, Field)] if get_origin(hint) is Annotated else []
        )
        kinds[name] = found[0] if found else None
    return kinds


def _init(cls: type, kinds: dict[str, Field | None], extra: Any) -> Callable[..., None]:
    """``__init__``: each field checked by its kind (in declaration order) and set, then the
    class's ``_check``; the parameters and defaults are the dataclass fields'."""
    env: dict[str, Any] = {"_set": object.__setattr__, "_owner": cls.__name__, "_extra": extra}
    params, lines = ["self"], []
    for i, f in enumerate(fields(cls)):
        name = f.name
        if f.default is not MISSING:
            env[f"_d{i}"] = f.default
            params.append(f"{name}=_d{i}")
        elif f.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{name}: a wire value has no default factory")
        else:
            params.append(name)
        kind = kinds.get(name)
        if kind is None:
            lines.append(f"    _set(self, {name!r}, {name})")
        else:
            env[f"_k{i}"] = kind.check
            lines.append(f"    _set(self, {name!r}, _k{i}(_owner, {name!r}, {name}))")
    if extra is not None:
        lines.append("    _extra(self)")
    source = f"def __init__({', '.join(params)}):\n" + ("\n".join(lines) or "    pass") + "\n"
    exec(compile(source, f"<__init__ of {cls.__name__}>", "exec"), env)
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {**{f.name: f.type for f in fields(cls)}, "return": None}  # as dataclasses'
    return init


def _values(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of an instance's field values, in declaration order."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return lambda obj: ()


def _eq(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:  # as dataclasses': the same class, equal fields
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:  # as dataclasses' for a frozen class: the fields' tuple
        return hash(values(self))

    return __hash__


def _repr(names: tuple[str, ...]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:  # as dataclasses': Name(field=value, ...)
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__
