"""Reading a dispatch table (JSON from `kbench tune`) on the Python side with
the same rules as the native loader (native/src/core/kb_table.c), so that
both read a table the same way or both refuse it:

- UTF-8 text, one JSON object, nested at most MAX_DEPTH levels;
- no key twice in one object (readers disagree on which one counts);
- the fields the dispatcher reads present and in range: every rule an
  object with op (gemm or conv2d), class (an object) and realization (a
  string); class bounds m/n/k_min/max numbers >= 0, kernel sizes and
  strides integers in [1, 2^31 - 1], depthwise true or false.

Machine and library checks (fingerprint, version) stay with the native
loader, which knows the running CPU. Every refusal is an InvalidArgument
whose field names the place (table.rules[3].class.kh)."""

from __future__ import annotations

import json
import math
from typing import Any

from kbench.errors import InvalidArgument

MAX_DEPTH = 64  # the native parser's limit
MAX_RULES = 4096
GEMM_BOUNDS = ("m_min", "m_max", "n_min", "n_max", "k_min", "k_max")
CONV_FIELDS = ("kh", "kw", "stride_h", "stride_w")
CONV_LIMIT = 2**31 - 1


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise InvalidArgument(f"table: the key {key!r} appears more than once in one "
                                  "object", "table")
        seen[key] = value
    return seen


def _depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value (a scalar is 1, as in the native
    parser); InvalidArgument for a string the native parser refuses (a NUL
    character, an unpaired surrogate)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        deepest = max(deepest, d)
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
            stack.extend((k, d + 1) for k in v)
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
        elif isinstance(v, str) and ("\0" in v or any("\ud800" <= ch <= "\udfff" for ch in v)):
            raise InvalidArgument("table: a string holds a NUL character or an unpaired "
                                  "surrogate", "table")
    return deepest


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def decode(data: bytes | str, source: str = "table") -> str:
    """The table's text; InvalidArgument if the bytes are not UTF-8."""
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgument(f"table: {source} is not UTF-8 text (byte {exc.start})",
                              "table") from None


def _number(cls: dict[str, Any], key: str, path: str, lo: float, hi: float,
            integer: bool) -> None:
    if key not in cls:
        return
    v = cls[key]
    field = f"{path}.{key}"
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise InvalidArgument(f"{field}: must be a number, got {v!r}", field)
    x = float(v) if not isinstance(v, int) or abs(v) < 2**1000 else math.copysign(math.inf, v)
    if not lo <= x <= hi or (integer and x != math.floor(x)):
        what = "an integer" if integer else "a number"
        raise InvalidArgument(f"{field}: {v!r} is not {what} in [{lo:.0f}, {hi:.0f}]", field)


def parse(data: bytes | str) -> dict[str, Any]:
    """The table as a dict, checked as described above."""
    text = decode(data)
    deep = InvalidArgument(f"table: nested more than {MAX_DEPTH} levels deep", "table")
    try:
        table = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
    except RecursionError:
        raise deep from None
    except ValueError as exc:
        raise InvalidArgument(f"table: not valid JSON: {exc}", "table") from None
    if _depth(table) > MAX_DEPTH:
        raise deep
    if not isinstance(table, dict):
        raise InvalidArgument("table: must be a JSON object", "table")
    if table.get("kbench_dispatch_table") != 1 or isinstance(table.get("kbench_dispatch_table"),
                                                              bool):
        raise InvalidArgument("table.kbench_dispatch_table: missing, or not format version 1",
                              "table.kbench_dispatch_table")
    rules = table.get("rules")
    if not isinstance(rules, list):
        raise InvalidArgument("table.rules: missing (a list of rules)", "table.rules")
    if len(rules) > MAX_RULES:
        raise InvalidArgument(f"table.rules: more than {MAX_RULES} rules", "table.rules")
    for i, rule in enumerate(rules):
        path = f"table.rules[{i}]"
        if (not isinstance(rule, dict) or rule.get("op") not in ("gemm", "conv2d")
                or not isinstance(rule.get("class"), dict)
                or not isinstance(rule.get("realization"), str)):
            raise InvalidArgument(f"{path}: every rule needs op (gemm or conv2d), class (an "
                                  "object) and realization (a name)", path)
        cls = rule["class"]
        for key in GEMM_BOUNDS:
            _number(cls, key, f"{path}.class", 0, math.inf if key.endswith("max") else 2.0**64,
                    False)
        for key in CONV_FIELDS:
            _number(cls, key, f"{path}.class", 1, CONV_LIMIT, True)
        if "depthwise" in cls and not isinstance(cls["depthwise"], bool):
            field = f"{path}.class.depthwise"
            raise InvalidArgument(f"{field}: must be true or false", field)
    return table
