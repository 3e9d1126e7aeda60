"""Progress with an ETA for long correctness runs: a line at every tenth of
the case tests (and at the last), with elapsed time and time left."""

from __future__ import annotations

from dataclasses import dataclass


def hms(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


@dataclass
class ProgressCounter:
    """Counts finished case tests; `tick(elapsed)` returns a line when a new
    tenth of the total is reached (None otherwise)."""

    total: int
    steps: int = 10
    done: int = 0
    failed: int = 0
    _shown: int = 0

    def tick(self, elapsed_s: float, failed: bool = False) -> str | None:
        self.done += 1
        self.failed += int(failed)
        step = self.done * self.steps // max(1, self.total)
        if step <= self._shown and self.done != self.total:
            return None
        self._shown = step
        left = elapsed_s / self.done * (self.total - self.done)
        bad = f", {self.failed} failed" if self.failed else ""
        return (f"[{self.done}/{self.total} cases {self.done / max(1, self.total):.0%}{bad}; "
                f"elapsed {hms(elapsed_s)} ETA {hms(left)}]")
