"""Numbers as text (kbench.judge.numbers): an error/bound ratio or a count
ratio is printed with as few digits as tell it apart from 1 and from the
other side of 1, never rounded onto 1. Found untested by mutmut's generated
mutants of the module (docs/mutation.md, "Generated mutants")."""

from __future__ import annotations

import math

import pytest

from kbench.judge.numbers import fixed, sig


@pytest.mark.parametrize(("x", "text"), [
    (0.12345, "0.1235"),      # four significant digits by default
    (2.5, "2.5"),
    (1.0, "1"),               # exactly 1 is 1
    (1.99996, "2"),           # rounding onto 2 is no crossing of 1
    (0.5, "0.5"),
    (1.5e-10, "1.5e-10"),     # the lower-case exponent of "g"
])
def test_sig_keeps_four_digits_away_from_1(x, text):
    assert sig(x) == text


@pytest.mark.parametrize(("x", "text"), [
    (0.99995, "0.99995"),     # 4 digits would print 1: below the limit, shown below it
    (0.999951, "0.99995"),    # one digit more than needed is not added
    (1.00004, "1.00004"),     # 4 and 5 digits print 1: above it, shown above it
    (1.0000000000000002, "1.0000000000000002"),  # the next double after 1 needs all 17
])
def test_sig_widens_where_rounding_would_land_on_1(x, text):
    assert sig(x) == text
    assert (float(sig(x)) < 1) == (x < 1) and (float(sig(x)) > 1) == (x > 1)


def test_sig_takes_its_digits():
    assert sig(0.123456, 2) == "0.12" and sig(0.123456, 6) == "0.123456"


@pytest.mark.parametrize(("x", "text"), [
    (math.inf, "inf"), (-math.inf, "-inf"), (math.nan, "nan")])
def test_non_finite_values_are_printed_as_python_does(x, text):
    assert sig(x) == text and fixed(x) == text


@pytest.mark.parametrize(("x", "text"), [
    (2.5, "2.500"),           # three decimals by default
    (0.9996, "0.9996"),       # "1.000" would hide a near-limit ratio
    (1.0004, "1.0004"),       # "1.000" would hide more instructions
    (1.0, "1.000"),
])
def test_fixed_widens_only_where_it_would_show_1(x, text):
    assert fixed(x) == text


def test_fixed_takes_its_places():
    assert fixed(0.5, 1) == "0.5" and fixed(0.96, 1) == "0.96"
