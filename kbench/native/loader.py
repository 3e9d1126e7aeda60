"""Loading the cffi extension and turning native status codes into exceptions.

The module name can be overridden with KBENCH_NATIVE (the sanitizer build in
ci/sanitize.sh is a separate top-level module)."""

from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from functools import cache
from typing import Any

from kbench.errors import KbenchError, from_status


@dataclass(frozen=True)
class Native:
    ffi: Any
    lib: Any

    def new_error(self) -> Any:
        return self.ffi.new("kb_error *")

    def check(self, status: int, err: Any) -> None:
        """Raises the KbenchError subclass for a failed call."""
        if status == 0:
            return
        # the library keeps its messages valid UTF-8; a foreign build may not
        field = self.ffi.string(err.field).decode(errors="replace")
        message = self.ffi.string(err.message).decode(errors="replace")
        raise from_status(status, field, message)


@cache
def load(module: str | None = None) -> Native:
    name = module or os.environ.get("KBENCH_NATIVE") or "kbench._native"
    try:
        mod = importlib.import_module(name)
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise KbenchError(
            f"the native module {name!r} is not built: run `pip install -e .` in the "
            f"kbench checkout ({exc})"
        ) from exc
    return Native(mod.ffi, mod.lib)
