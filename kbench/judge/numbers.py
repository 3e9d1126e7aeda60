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


__all__ = ["fixed", "sig"]
