"""The performance suite (`kbench run --suite perf`): every case of the
chosen catalogs on every realization that takes it. A case is verified
first, then timed natively inside its target. For in-process targets
pytest-benchmark drives the calibrated rounds on a clock fed by the native
timer; worker targets time their rounds natively and replay them into
pytest-benchmark, so the statistics and JSON have one shape. On qemu:
targets every case is also counted: exact dynamic instructions per phase
of one single-threaded call (kbench.harness.counting). Only collected with
--kb-perf."""

from dataclasses import replace

import pytest

from kbench.errors import WorkerCrashed
from kbench.harness import counting, perf
from kbench.harness.runner import fault_verdict
from kbench.judge.verdict import MISTRUSTED, PASS
from kbench.native.calls import Timing
from kbench.targets.inprocess import InProcessEngine
from kbench.targets.isolated import IsolatedHostEngine


@pytest.mark.perf
def test_perf(kb_session, kb_perf_job, benchmark, request):
    job = kb_perf_job
    kb_session.start_perf_test(request.node.callspec.id)  # a new pass: fresh workers
    target = kb_session.target(job.target)
    settings = kb_session.perf_settings
    verdict = perf.verify(target, job, settings, kb_session.inputs)
    if verdict.status not in (PASS, MISTRUSTED):
        _failed(kb_session, request, verdict)
    try:
        verdict = _timed(kb_session, job, target, settings, benchmark, verdict)
    except WorkerCrashed as exc:  # the process died, ended or hung while timing
        _failed(kb_session, request, replace(fault_verdict(job, exc), suite="perf"))
    kb_session.record(verdict)
    kb_session.perf_progress(request.config, verdict)
    if verdict.status not in (PASS, MISTRUSTED):
        pytest.fail(verdict.line())
    assert verdict.rounds > 0 and verdict.time_median_ns > 0


def _failed(kb_session, request, verdict):
    kb_session.record(verdict)
    kb_session.perf_progress(request.config, verdict)
    pytest.fail(f"{verdict.line()}\n  reproduce: {kb_session.reproducer(verdict)}")


def _timed(kb_session, job, target, settings, benchmark, verdict):
    """The verified case timed (and counted on emulated targets)."""
    prep = perf.prepare(target, job, settings, kb_session.inputs)
    clock = kb_session.clock
    benchmark._timer = clock.now  # pytest-benchmark reads time from the native timer
    benchmark.extra_info.update(realization=job.realization.name, target=job.target,
                                emulated=target.emulated, flops=job.case.flops)
    engine = target.engine
    in_process = isinstance(engine, InProcessEngine) or (
        isinstance(engine, IsolatedHostEngine) and not job.realization.is_plugin)
    if in_process and benchmark.enabled:
        # warm up and calibrate the calls per round once, then let pytest-benchmark
        # run its calibrated rounds of exactly that many native calls each
        reps = prep.run(settings.timing(rounds=1)).reps_per_round
        round_timing = Timing(warmup=0, rounds=1, min_round_ns=0, max_reps=reps,
                              cold=settings.cold)

        def one_round():  # the clock advances by the round's per-call time
            clock.advance(prep.run(round_timing).times_ns[0])
        # pytest-benchmark spends --max-time on the clock it reads, which moves by one
        # call per round of `reps` calls: its budget is scaled to match, or a 4 us
        # kernel would get max-time / 4 us rounds of min-round-ms each
        benchmark._max_time = benchmark._max_time / max(1, reps)
        benchmark(one_round)
        rounds = [t * 1e9 for t in benchmark.stats.stats.data]
    else:
        res = prep.run(settings.timing())
        rounds, reps = res.times_ns, res.reps_per_round
        replay = iter(rounds)
        benchmark.pedantic(lambda: clock.advance(next(replay)), rounds=len(rounds), iterations=1)
    # pytest-benchmark's statistics are per call (each of its rounds is one round of
    # `reps` native calls, recorded as that round's per-call time)
    benchmark.extra_info["calls_per_round"] = reps
    verdict = perf.with_times(verdict, rounds, reps, prep.packing)
    pid = perf.process_id(target)
    verdict = replace(verdict, perf_pass=kb_session.perf_pass,
                      process="" if pid is None else str(pid))
    if kb_session.counter is not None:  # exact instruction counts on emulated targets
        verdict = counting.with_counts(kb_session.counter, verdict, job, kb_session.inputs)
    return verdict
