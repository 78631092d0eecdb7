"""How a kernel's parameters map to the family's values: `args = ["M", "N", "K", 1.0, "A", "B", 0.0, "C"]`
in a manifest or `--args M,N,K,1.0,A,B,0.0,C`. Names are the family's buffers and size symbols (the
parameter names of its signature, and its dimensions in either case); numbers are scalar arguments,
passed with the type the kernel declares. Bare numbers fill the family's named scalars in order
(matmul: alpha, then beta, GEMM's order) so its reference computes what the kernel does; `beta=0.5`
names one. Checked against the kernel's parameter list before any launch."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from gpuprof.variants.declarations import parameters

Arg = str | int | float  # one entry as written: a name, `scalar=value`, or a number

_INTEGERS = {"int": "int32", "signed": "int32", "signed int": "int32", "int32_t": "int32", "unsigned": "uint32",
             "unsigned int": "uint32", "uint32_t": "uint32", "uint": "uint32", "long": "int64", "long long": "int64",
             "long int": "int64", "int64_t": "int64", "unsigned long": "uint64", "unsigned long long": "uint64",
             "uint64_t": "uint64", "size_t": "uint64", "short": "int16", "unsigned short": "uint16"}
_FLOATS = {"float": "float32", "double": "float64"}
_NAME = re.compile(r"[A-Za-z_]\w*")


class ArgsError(ValueError):
    """A mapping that does not fit the kernel; the message names the position."""


@dataclass(frozen=True)
class Slot:
    """One kernel parameter's argument: a family value by name, or a number (maybe a family scalar)."""

    source: str | None  # the family name whose value is passed (a buffer or a size), None for a number
    number: int | float | None
    scalar: str | None  # the family scalar this number is (alpha), None if none
    ctype: str  # the type the kernel declares here, without const


def parse_option(text: str) -> tuple[Arg, ...]:
    """'M,N,K,1.0,A,B,beta=0.5,C' -> ('M', 'N', 'K', 1.0, 'A', 'B', 'beta=0.5', 'C')."""
    out: list[Arg] = []
    for index, item in enumerate((t.strip() for t in text.split(",")), 1):
        if not item:
            raise ArgsError(f"--args position {index} is empty; write names and numbers like M,N,K,1.0,A,B,0.0,C")
        out.append(_number(item) if _number(item) is not None else item)  # type: ignore[arg-type]
    return tuple(out)


def _number(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def resolve(args: tuple[Arg, ...], kernel: str, kernel_params: list[tuple[str, str]], family_signature: str,
            dims: tuple[str, ...], scalars: dict[str, float], what: str = "--args") -> tuple[Slot, ...]:
    """The slots of a mapping, or ArgsError naming the first position that does not fit."""
    shown = ", ".join(f"{t} {n}".strip() for t, n in kernel_params)
    if len(args) != len(kernel_params):
        raise ArgsError(f"{what} gives {len(args)} argument{'s' * (len(args) != 1)}; "
                        f"{kernel} takes {len(kernel_params)}: ({shown})")
    family = {name: kind for kind, name in parameters(family_signature)}
    sizes = {d for d in dims} | {d.upper() for d in dims}
    named_scalars = {a.split("=", 1)[0].strip() for a in args if isinstance(a, str) and ("=" in a or a in scalars)}
    free = [s for s in scalars if s not in named_scalars]
    slots = []
    for index, (arg, (kind, pname)) in enumerate(zip(args, kernel_params), 1):
        here = f"{what} position {index} ({arg}): {kernel}'s parameter {index} is '{kind} {pname}'".rstrip()
        if not isinstance(arg, str) or "=" in arg or arg in scalars:
            slots.append(_number_slot(arg, kind, scalars, free, here))
        elif arg in family and family[arg].endswith("*"):
            slots.append(_buffer_slot(arg, family[arg], kind, here))
        elif arg in family or arg in sizes:
            if _integer_type(kind) is None:
                raise ArgsError(f"{here}; {arg} is a size, an integer")
            slots.append(Slot(arg, None, None, _plain(kind)))
        else:
            choices = [n for n in family] + sorted(sizes - set(family)) + list(scalars)
            raise ArgsError(f"{here}; {arg!r} is no name of this family: choose from {', '.join(choices)} "
                            "or a number")
    outputs = [n for n, k in family.items() if k.endswith("*") and not k.startswith("const")]
    missing = [n for n in outputs if n not in {s.source for s in slots}]
    if missing:
        raise ArgsError(f"{what} never passes {missing[0]}, the family's output; {kernel} could not write it")
    return tuple(slots)


def _number_slot(arg: Arg, kind: str, scalars: dict[str, float], free: list[str], here: str) -> Slot:
    scalar: str | None = None
    if isinstance(arg, str):
        name, _, value = arg.partition("=")
        scalar, number = name.strip(), _number(value.strip()) if value.strip() else scalars.get(name.strip())
        if scalar not in scalars:
            raise ArgsError(f"{here}; {scalar!r} is no scalar of this family"
                            + (f" (it has {', '.join(scalars)})" if scalars else " (it has none)"))
        if number is None:
            raise ArgsError(f"{here}; write {scalar}=NUMBER, e.g. {scalar}=1.0")
    else:
        number = arg
        if free:
            scalar = free.pop(0)
    if kind.endswith("*"):
        raise ArgsError(f"{here}, a pointer; give a buffer name, not the number {number}")
    if _integer_type(kind) is None and _FLOATS.get(_plain(kind)) is None:
        raise ArgsError(f"{here}; gpuprof passes numbers as int, unsigned, long, size_t, float or double")
    if _integer_type(kind) is not None and isinstance(number, float) and not float(number).is_integer():
        raise ArgsError(f"{here}, an integer; {number} has a fraction")
    return Slot(None, number, scalar, _plain(kind))


def _buffer_slot(arg: str, family_kind: str, kind: str, here: str) -> Slot:
    if not kind.endswith("*"):
        raise ArgsError(f"{here}, not a pointer; {arg} is a buffer ({family_kind})")
    if _element(kind) != _element(family_kind):
        raise ArgsError(f"{here}; {arg} is a buffer of {_element(family_kind)}, not {_element(kind)}")
    if not family_kind.startswith("const") and kind.startswith("const"):
        raise ArgsError(f"{here}; {arg} is the output, so the parameter cannot be const")
    return Slot(arg, None, None, _plain(kind))


def _plain(kind: str) -> str:
    return " ".join(w for w in kind.replace("*", " * ").split() if w not in ("const", "volatile")).replace(" *", "*")


def _element(kind: str) -> str:
    return _plain(kind).rstrip("*").strip()


def _integer_type(kind: str) -> str | None:
    return _INTEGERS.get(_plain(kind))


def scalar_values(slots: tuple[Slot, ...], defaults: dict[str, float]) -> dict[str, float]:
    """The family's scalars as the kernel gets them: the defaults, with the mapping's numbers."""
    return {**defaults, **{s.scalar: float(s.number) for s in slots if s.scalar is not None and s.number is not None}}


def bind(slots: tuple[Slot, ...], named: dict[str, Any]) -> tuple:
    """The launch's argument tuple: buffers as they are, sizes and numbers in the declared type."""
    import numpy as np

    out = []
    for slot in slots:
        value = named[slot.source] if slot.source is not None else slot.number
        if slot.ctype.endswith("*"):
            out.append(value)
        else:
            dtype = np.dtype(_integer_type(slot.ctype) or _FLOATS[slot.ctype])
            out.append(dtype.type(value))
    return tuple(out)


def is_name(text: str) -> bool:
    return bool(_NAME.fullmatch(text))
