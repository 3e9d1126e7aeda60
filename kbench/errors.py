"""Exceptions raised by kbench. Every native error code maps to one class."""

from __future__ import annotations


class KbenchError(Exception):
    """A call was refused. `field` names the offending argument or header field."""

    code = "error"

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class InvalidArgument(KbenchError):
    code = "invalid_argument"


class InvalidPackedB(InvalidArgument, ValueError):
    """A PackedB built with a field of the wrong type or range: an InvalidArgument
    that is also a ValueError, as Python's own constructors raise."""


class ContractViolation(KbenchError):
    """The packed-B contract was violated (wrong backend, SVL, shape, corruption...)."""

    code = "contract_violation"


class Unsupported(KbenchError):
    code = "unsupported"


class OutOfMemory(KbenchError):
    code = "out_of_memory"


class SizeOverflow(KbenchError):
    code = "overflow"


class WorkLimit(KbenchError):
    """A call whose work is over the work cap of the Python API (field
    limits.max_flops; kbench.native.limits)."""

    code = "work_limit"


class InternalError(KbenchError):
    code = "internal"


class WorkerCrashed(KbenchError):
    """A worker target died while running a problem (signal or broken pipe).
    `fault` says how: "crashed" (a signal), "exited" (the process ended by
    itself, e.g. exit() inside a kernel) or "timed out" (no reply within the
    call's bound: it was killed); "" when the process is not to blame (a
    remote target's lost connection)."""

    code = "worker_crashed"
    fault = "crashed"


class WorkerExited(WorkerCrashed):
    """A worker ended by itself (an exit() inside a call) before it replied."""

    code = "worker_exited"
    fault = "exited"


class WorkerTimedOut(WorkerCrashed):
    """A worker gave no reply within the call's time bound and was killed."""

    code = "worker_timed_out"
    fault = "timed out"


class ProtocolError(KbenchError):
    """A worker refused a frame or sent one that could not be read."""

    code = "protocol_error"


class GuardPageHit(WorkerCrashed):
    """A kernel or packer read past an input into a guard page (checking runs
    in a worker, kb_guard_*): a finding about the code that ran, naming the
    buffer; the worker ended itself after reporting it."""

    code = "guard_page"
    fault = ""


BY_STATUS: dict[int, type[KbenchError]] = {
    1: InvalidArgument,
    2: ContractViolation,
    3: Unsupported,
    4: OutOfMemory,
    5: SizeOverflow,
    6: InternalError,
}

BY_CODE: dict[str, type[KbenchError]] = {
    cls.code: cls
    for cls in (InvalidArgument, ContractViolation, Unsupported, OutOfMemory, SizeOverflow,
                InternalError, WorkerCrashed, WorkerExited, WorkerTimedOut, GuardPageHit,
                ProtocolError)
}


def from_status(status: int, field: str, message: str) -> KbenchError:
    return BY_STATUS.get(status, InternalError)(message, field)
