"""The machine's state around a timing run, as far as it can be read: load
averages, CPU count, the CPU frequency governor per CPU (Linux cpufreq, when
the kernel exposes it; VMs often do not) and current frequencies. Recorded
in run.json (`machine_state`) and shown with timing results, so a reader can
tell a quiet run from a busy one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

CPUFREQ = Path("/sys/devices/system/cpu")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def machine_state(sysfs: Path = CPUFREQ) -> dict[str, Any]:
    """Load averages (1, 5, 15 min), CPUs, governors and frequencies."""
    try:
        load = list(os.getloadavg())
    except OSError:
        load = []
    governors: dict[str, str] = {}
    freqs: dict[str, int] = {}
    for cpu in sorted(sysfs.glob("cpu[0-9]*")):
        gov = _read(cpu / "cpufreq" / "scaling_governor")
        if gov is not None:
            governors[cpu.name] = gov
        f = _read(cpu / "cpufreq" / "scaling_cur_freq")
        if f is not None and f.isdigit():
            freqs[cpu.name] = int(f)
    cpus = os.cpu_count() or 0
    return {
        "load_avg": load,
        "cpus": cpus,
        "governor": sorted(set(governors.values())) or "unreadable",
        "governors": governors,
        "cur_freq_khz": freqs,
    }


def describe(state: dict[str, Any]) -> str:
    """One line: load, CPUs, governor."""
    load = state.get("load_avg") or []
    gov = state.get("governor")
    gov_s = ", ".join(gov) if isinstance(gov, list) else str(gov)
    load_s = "/".join(f"{x:.2f}" for x in load) if load else "unknown"
    return f"load {load_s} (1/5/15 min) on {state.get('cpus')} CPUs, governor {gov_s}"


def busy(state: dict[str, Any], share: float = 0.5) -> bool:
    """The 1-minute load is above `share` of the CPUs: other work competes."""
    load = state.get("load_avg") or []
    cpus = state.get("cpus") or 0
    return bool(load and cpus and load[0] > share * cpus)


def cpu_idle_ticks(stat: Path = Path("/proc/stat")) -> dict[int, int]:
    """Idle + iowait ticks per CPU (Linux /proc/stat), {} where unreadable."""
    out: dict[int, int] = {}
    text = _read(stat) or ""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0].startswith("cpu") and parts[0][3:].isdigit():
            out[int(parts[0][3:])] = int(parts[4]) + int(parts[5])
    return out


def quietest_cpu(before: dict[int, int], after: dict[int, int],
                 allowed: set[int] | None = None) -> int | None:
    """The CPU that was idle longest between two cpu_idle_ticks samples."""
    gains = {c: after[c] - before.get(c, after[c]) for c in after
             if allowed is None or c in allowed}
    return max(sorted(gains), key=lambda c: gains[c]) if gains else None
