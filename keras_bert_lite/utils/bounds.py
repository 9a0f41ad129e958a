"""Numeric bounds of a setting: one check and one message, for command-line flags (`runners.flags`) and for the
arguments library functions take from users.

Bounds are keyword arguments: `minimum` and `maximum` inclusive, `above` and `below` exclusive, e.g.
`minimum=0, below=1` for a probability that must leave something. A float must also be finite.
"""

from __future__ import annotations

import math
import numbers
import operator

_COMPARISONS = {
    "minimum": (operator.ge, ">="),
    "above": (operator.gt, ">"),
    "maximum": (operator.le, "<="),
    "below": (operator.lt, "<"),
}


def describe(bounds: dict) -> str:
    """The values `bounds` admit, e.g. ">= 0 and < 1" ("" for no bounds)."""
    return " and ".join(f"{symbol} {bounds[name]}" for name, (_, symbol) in _COMPARISONS.items() if name in bounds)


def refusal(value, bounds: dict) -> str:
    """Why `value` is out of `bounds` ("must be >= 1, got 0"), or "" when it is within them."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number {describe(bounds)}".rstrip() + f", got {value}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return f"must be a number {describe(bounds)}".rstrip() + f", got {value!r}"
    if all(compare(value, bounds[name]) for name, (compare, _) in _COMPARISONS.items() if name in bounds):
        return ""
    return f"must be {describe(bounds)}, got {value}"


def check_argument(name: str, value, **bounds) -> None:
    """Refuses an argument outside its bounds (module docstring).

    Args:
        name: the argument's name, for the message.
        value: its value.
        **bounds: `minimum`, `maximum`, `above`, `below`.

    Raises:
        ValueError: naming the argument, its value and the bounds.
    """
    message = refusal(value, bounds)
    if message:
        raise ValueError(f"{name} {message}.")
