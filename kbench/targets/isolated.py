"""The host target with plugins: kbench's own realizations (and the peers)
run in this process, every plugin realization runs in the host worker, a
child process speaking the worker protocol (kbench.targets.worker).

A plugin is work in progress by nature. Loaded into kbench's own process,
a segfault, an abort, an exit() or an endless loop inside it would end or
freeze the whole run and lose every verdict of it; in the worker it ends
or freezes only the worker, which the parent kills (after the call's time
bound, kbench.targets.timeouts) and restarts, and the call becomes a
crashed, exited or timed-out verdict naming the plugin. Loading happens
in the worker too, so a malformed file or an entry point that crashes or
hangs is one refusal line naming the file.

`--plugin-in-process` (kbench run, info, realizations) loads plugins into
this process instead (InProcessEngine with plugins): for a debugger, and
unsafe for the reasons above."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from kbench.errors import KbenchError
from kbench.native.api import RawProblem, Selector
from kbench.native.calls import CallResult, ConvDesc, TargetInfo, Timing
from kbench.targets.inprocess import InProcessEngine
from kbench.targets.plugins import PluginError, PluginLoads, expand, host_arch
from kbench.targets.timeouts import CallBounds
from kbench.targets.tools import worker_binary
from kbench.targets.worker import WorkerEngine, WorkerSpec

IN_PROCESS_HINT = ("--plugin-in-process loads plugins into kbench's own process instead "
                   "(unsafe: a crash there ends the run)")


class IsolatedHostEngine:
    """Our realizations in process, plugin realizations in the host worker."""

    emulated = False

    def __init__(self, plugins: Sequence[str], bounds: CallBounds | None = None,
                 local: InProcessEngine | None = None) -> None:
        self.local = local or InProcessEngine()
        self.bounds = bounds or CallBounds(False)
        paths = [expand(p if os.path.isabs(p) else os.path.abspath(p), host_arch())
                 for p in plugins]
        self.plugins = PluginLoads(list(plugins))
        self.worker: WorkerEngine | None = None
        try:
            command = [worker_binary("host")]
        except KbenchError as exc:
            for path in paths:
                self.plugins.errors.append(PluginError(
                    path, f"{path}: not loaded: the host worker that runs plugins cannot be "
                          f"built here ({str(exc).splitlines()[0]}); {IN_PROCESS_HINT}"))
            return
        self.worker = WorkerEngine(WorkerSpec(command, {}, emulated=False, bounds=self.bounds,
                                              plugins=paths, arch=host_arch()))
        self.plugins = self.worker.plugins

    # -- routing ------------------------------------------------------------------

    def _worker_for(self, selector: Selector | None) -> WorkerEngine | None:
        """The worker when the call is a plugin's (forced, or a dispatch table
        that names a plugin realization), else None (the call runs here)."""
        w = self.worker
        if w is None or selector is None:
            return None
        try:
            w.start()  # the plugins load in the worker: what it owns is known once it runs
        except KbenchError:
            return None  # no plugin realization here; info() reports why
        if not self.plugins.loaded:
            return None
        if selector.force is not None:
            return w if self.plugins.owner(selector.force) is not None else None
        table = selector.table
        if table is not None and any(f"{p.name}." in table.text for p in self.plugins.loaded):
            return w
        return None

    # -- engine interface -------------------------------------------------------------

    def info(self, name: str) -> TargetInfo:
        here = self.local.info(name)
        extra: dict[str, Any] = dict(here.extra)
        plugin_reals = []
        if self.worker is not None:
            try:
                there = self.worker.info(name)
            except KbenchError as exc:  # the worker itself cannot start or answer
                for path in self.worker.spec.plugins:
                    self.plugins.errors.append(PluginError(
                        path, f"{path}: not loaded: the host worker that runs plugins failed "
                              f"({exc}); {IN_PROCESS_HINT}"))
                self.worker = None
            else:
                plugin_reals = [r for r in there.realizations if r.is_plugin]
                extra["plugin_worker"] = self.worker.spec.command
        extra.update(self.plugins.to_extra())
        return replace(here, realizations=[*here.realizations, *plugin_reals], extra=extra)

    def input_guards(self, realization: str) -> bool:
        """Inputs against guard pages: for the plugin calls the worker runs."""
        if self.worker is None:
            return False
        self.worker.start()
        return self.plugins.owner(realization) is not None

    def heap_accounting(self, realization: str) -> bool:
        """Heap blocks are counted for the plugin calls the worker runs (ours run
        in this process, whose allocator is not interposed)."""
        return self.input_guards(realization)

    def gemm_raw(self, m: int, n: int, k: int, problems: list[RawProblem],
                 selector: Selector | None = None, timing: Timing | None = None,
                 guard: str | None = None) -> CallResult:
        worker = self._worker_for(selector)
        if worker is not None:
            return worker.gemm_raw(m, n, k, problems, selector, timing, guard)
        return self.local.gemm_raw(m, n, k, problems, selector, timing)

    def conv_raw(self, desc: ConvDesc, x: np.ndarray | None, w: np.ndarray | None,
                 bias: np.ndarray | None, out: np.ndarray | None,
                 selector: Selector | None = None, timing: Timing | None = None,
                 guard: str | None = None) -> CallResult:
        worker = self._worker_for(selector)
        if worker is not None:
            return worker.conv_raw(desc, x, w, bias, out, selector, timing, guard)
        return self.local.conv_raw(desc, x, w, bias, out, selector, timing)

    def pack_raw(self, backend: str | int | None, n: int, k: int, b: np.ndarray | None,
                 ldb: int, bias: np.ndarray | None = None, dst_size: int | None = None,
                 selector: Selector | None = None) -> np.ndarray:
        return self.local.pack_raw(backend, n, k, b, ldb, bias, dst_size, selector)

    def time_pack(self, backend: str | int | None, n: int, k: int, b: np.ndarray, ldb: int,
                  bias: np.ndarray | None, timing: Timing,
                  selector: Selector | None = None) -> CallResult:
        return self.local.time_pack(backend, n, k, b, ldb, bias, timing, selector)

    def _plugin_worker(self, realization: str) -> WorkerEngine:
        if self.worker is not None:
            self.worker.start()  # a first call may come before info(): load the plugins
        if self.worker is None or self.plugins.owner(realization) is None:
            from kbench.errors import InvalidArgument
            raise InvalidArgument(f"realization: {realization!r} is not a loaded plugin "
                                  "realization of this target", "realization")
        return self.worker

    def pack_plugin(self, realization: str, n: int, k: int, b: np.ndarray | None, ldb: int,
                    bias: np.ndarray | None = None, dst_size: int | None = None,
                    fill: int | None = None, guard: str | None = None) -> np.ndarray:
        return self._plugin_worker(realization).pack_plugin(realization, n, k, b, ldb, bias,
                                                            dst_size, fill, guard)

    def pack_plugin_lhs(self, realization: str, m: int, k: int, a: np.ndarray, lda: int,
                        fill: int | None = None, guard: str | None = None) -> np.ndarray:
        return self._plugin_worker(realization).pack_plugin_lhs(realization, m, k, a, lda, fill,
                                                                guard)

    def time_pack_plugin(self, realization: str, n: int, k: int, b: np.ndarray, ldb: int,
                         bias: np.ndarray | None, timing: Timing) -> CallResult:
        return self._plugin_worker(realization).time_pack_plugin(realization, n, k, b, ldb,
                                                                 bias, timing)

    def set_svl(self, bits: int) -> int:
        return self.local.set_svl(bits)

    def set_sve_vl(self, bits: int) -> int:
        return self.local.set_sve_vl(bits)

    def discard(self) -> None:
        """After a call that wrote outside its buffers: the plugin worker is
        killed (its heap may be damaged) and starts afresh on the next call."""
        if self.worker is not None:
            self.worker.discard()

    def close(self) -> None:
        if self.worker is not None:
            self.worker.close()
        self.local.close()


__all__ = ["IN_PROCESS_HINT", "IsolatedHostEngine"]
