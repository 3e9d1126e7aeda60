"""Numbers as text without lying about which side of 1 they are on: an
error/bound of 0.99995 is a near-failure, not the limit, and a count ratio
of 1.0004 is more instructions, not the same."""

from __future__ import annotations

import math


def _crosses(x: float, shown: float) -> bool:
    """Does the rounded value land on 1, or on the other side of it, where x is not?"""
    return (x < 1 <= shown) or (x > 1 >= shown)


def sig(x: float, digits: int = 4) -> str:
    """x with `digits` significant digits (general format), and more where
    fewer would show a value other than 1 as 1 (or on the other side of 1)."""
    if not math.isfinite(x):
        return str(x)
    d = digits
    text = f"{x:.{d}g}"
    while d < 17 and _crosses(x, float(text)):
        d += 1
        text = f"{x:.{d}g}"
    return text


def fixed(x: float, places: int = 3) -> str:
    """x with `places` decimals, and more where fewer would round it onto 1."""
    if not math.isfinite(x):
        return str(x)
    p = places
    text = f"{x:.{p}f}"
    while p < 17 and _crosses(x, float(text)):
        p += 1
        text = f"{x:.{p}f}"
    return text


__all__ = ["fixed", "sig"]
