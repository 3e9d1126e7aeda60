"""Numbers as text without lying about which side of 1 they are on: an
error/bound of 0.99995 is a near-failure, not the limit, and a count ratio
of 1.0004 is more instructions, not the same."""

from __future__ import annotations

import math


def _crosses(x: float, shown: float) -> bool:
    """Does the rounded value land on 1, or on the other side of it, where x is not?"""
    return (x < 1 <= shown) or (x > 1 >= shown)


def _widened(x: float, spec: str, digits: int) -> str:
    """x formatted with `digits` (general `g` or fixed `f` spec), and more
    digits where fewer would show it as 1 or on the other side of 1."""
    if not math.isfinite(x):
        return str(x)
    text = f"{x:.{digits}{spec}}"
    while digits < 17 and _crosses(x, float(text)):
        digits += 1
        text = f"{x:.{digits}{spec}}"
    return text


def sig(x: float, digits: int = 4) -> str:
    """x with `digits` significant digits, more where fewer would show 1."""
    return _widened(x, "g", digits)


def fixed(x: float, places: int = 3) -> str:
    """x with `places` decimals, more where fewer would round it onto 1."""
    return _widened(x, "f", places)


def time_unit(ns: float) -> str:
    """A time in ns with 3 significant digits in the largest unit its printed
    value reaches (999,999 ns is "1 ms", never "1e+03 µs"); negatives too."""
    shown = abs(float(f"{ns:.3g}"))
    for scale, unit in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
        if shown >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


__all__ = ["fixed", "sig", "time_unit"]
