"""CSV cells of any length: Python's csv module refuses a field longer than
131,072 characters by default, and a perf row's round times (or an A/B row's)
can be longer. Every reader of a table kbench writes reads through this."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from contextlib import contextmanager

# the largest limit csv accepts on every platform (a C long may be 32 bits)
UNLIMITED = 2**31 - 1


@contextmanager
def any_length() -> Iterator[None]:
    """csv readers created and used inside take fields of any length; the
    module's limit is put back afterwards."""
    before = csv.field_size_limit(UNLIMITED)
    try:
        yield
    finally:
        csv.field_size_limit(before)
