"""The plugin ABI on this machine (in process and in the host worker): loading
and its refusals, plugin realizations as ordinary realizations (listing,
forcing, never a default, dispatch tables, tuning, packing and its timing,
threads, fingerprints), both forms driven by kbench (whole call; micro-kernel
with packed or plain LHS, and imatmul for convolution) and the checks kbench
makes of a micro-kernel's packed B. The examples are built from
examples/plugins with make (plugin_builds)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from plugin_builds import lib

from kbench.errors import ContractViolation, KbenchError, WorkerCrashed
from kbench.harness import probes, tune
from kbench.harness.perf import PerfSettings
from kbench.harness.runner import Job, applicable, run_job
from kbench.native import api
from kbench.native import plugins as native_plugins
from kbench.native.calls import Timing
from kbench.problems import inputs
from kbench.problems.cases import ConvCase, GemmCase
from kbench.targets.plugins import host_arch
from kbench.targets.spec import GuardedBuffer, parse_target

GEMMS = [GemmCase("pl_tail", 7, 37, 21, bias=True, clamp=True),
         GemmCase("pl_native", 9, 37, 21, b_form="native", bias=True, lda_pad=3, ldc_pad=2),
         GemmCase("pl_gemv", 1, 37, 20, bias=True),
         GemmCase("pl_batch", 5, 16, 33, b_form="native", batch=2),
         GemmCase("pl_k1", 6, 9, 1, bias=True)]
CONVS = [ConvCase("pl_conv", 2, 9, 9, 8, 12, 3, 3, stride=(2, 1), pad=(1, 0, 1, 1),
                  dilation=(1, 2), bias=True),
         ConvCase("pl_conv_g", 1, 7, 7, 8, 12, 3, 3, pad=(1, 1, 1, 1), groups=2, clamp=True),
         ConvCase("pl_conv_1x1", 2, 5, 5, 9, 7, 1, 1)]


def _bits(outs):
    return [np.ascontiguousarray(o).view(np.uint16) for o in outs]


@pytest.fixture(scope="module")
def host():
    t = parse_target("host", [lib("exwhole"), lib("exfaulty"), lib("exukref"),
                              lib("misdeclared")])
    yield t
    t.close()


@pytest.fixture(scope="module")
def hworker():
    t = parse_target("worker:host", [lib("exwhole"), lib("exfaulty"), lib("exukref")])
    yield t
    t.close()


# ---- loading and its refusals ------------------------------------------------------------


def _refusal(path: str) -> KbenchError:
    with pytest.raises(KbenchError) as exc:
        native_plugins.load_plugin(path)
    return exc.value


@pytest.mark.parametrize("name, reason", [
    ("noentry", "missing symbol kb_plugin_entry"),
    ("undefined", "undefined symbol: exbroken_helper_that_is_not_linked"),
    ("newabi", "built for plugin ABI 4, this kbench reads ABI 3"),
    ("badtable", "realizations[0] (gemm_missing): gemm is NULL"),
    ("badlayout", "realizations[0] (gemm): rhs_layout: x16p8x2 is not a layout kbench "
                  "implements"),
])
def test_a_broken_plugin_gets_one_clear_line(name, reason):
    err = _refusal(lib(name))
    assert err.field == "plugin"
    assert f"lib{name}.so" in str(err) and reason in str(err), str(err)
    assert "\n" not in str(err)


def test_a_plugin_for_another_architecture_is_refused():
    other = "aarch64" if host_arch() == "x86_64" else "x86_64"
    if other == "x86_64":
        pytest.skip("no x86_64 cross build on this machine")
    err = _refusal(lib("exwhole", other))
    assert f"built for {other}, this process runs on {host_arch()} (wrong architecture)" \
        in str(err)


def test_a_plugin_needing_an_isa_the_cpu_lacks_is_refused():
    if "sme2" in api.cpu_info().features:
        pytest.skip("this CPU has SME2")
    err = _refusal(lib("exsme"))
    assert "libexsme.so (exsme 1.0.0): every realization needs an ISA this CPU lacks " \
           "(e.g. sme2" in str(err)


def test_missing_and_non_elf_files(tmp_path):
    assert "no such file" in str(_refusal(str(tmp_path / "absent.so")))
    text = tmp_path / "notes.so"
    text.write_text("not a library\n")
    assert "not an ELF shared library" in str(_refusal(str(text)))


def test_a_loaded_plugin_describes_itself():
    info = native_plugins.load_plugin(lib("exwhole"))
    assert (info.name, info.version, info.abi_version) == ("exwhole", "1.0.0", 3)
    assert info.label == "exwhole 1.0.0" and info.path.startswith("/")
    forms = {r.name: (r.op, r.form, r.thread_safe, r.bias, r.usable) for r in info.realizations}
    assert forms == {"exwhole.gemm_f32acc": ("gemm", "whole-call", True, "last", True),
                     "exwhole.conv2d_direct_f32acc": ("conv2d", "whole-call", True, "last",
                                                      True)}
    count = len(native_plugins.loaded())
    assert native_plugins.load_plugin(lib("exwhole")) == info  # loading again: the same
    assert len(native_plugins.loaded()) == count


def test_a_target_goes_on_without_the_files_it_refuses():
    t = parse_target("host", [lib("exwhole"), lib("newabi"), "/nonexistent/libx.so"])
    info = t.info()
    errors = info.extra["plugin_errors"]
    assert [e["path"].rsplit("/", 1)[-1] for e in errors] == ["libnewabi.so", "libx.so"]
    assert [p["name"] for p in info.extra["plugins"]] == ["exwhole"]
    assert any(r.name == "exwhole.gemm_f32acc" for r in info.realizations)


def test_the_static_worker_cannot_load_plugins_and_says_so():
    from kbench.targets import crossbuild
    try:
        binary = crossbuild.build("aarch64")
        from kbench.targets.tools import find_qemu
        qemu = find_qemu()
    except KbenchError as exc:
        pytest.skip(str(exc))
    from kbench.targets.worker import WorkerEngine, WorkerSpec
    eng = WorkerEngine(WorkerSpec([qemu, "-cpu", "max", str(binary)], {}, emulated=True))
    try:
        with pytest.raises(KbenchError, match="cannot load shared libraries"):
            eng.load_plugin(lib("exwhole", "aarch64"))
    finally:
        eng.close()


# ---- plugin realizations are ordinary realizations -------------------------------------


def test_plugin_realizations_take_part_only_when_asked(host):
    # the host target runs its plugins in its isolated worker: this process
    # lists a plugin's realizations once it loads the plugin itself (and not
    # only when an earlier test of this file happened to load it here)
    native_plugins.load_plugin(lib("exwhole"))
    names = {r.name for r in api.realizations()}
    assert not any("." in n for n in names)
    asked = {r.name: r for r in api.realizations(api.Selector(plugins=True))}
    assert asked["exwhole.gemm_f32acc"].backend == "plugin:exwhole"
    assert asked["exwhole.gemm_f32acc"].is_plugin
    info = {r.name: r for r in host.info().realizations}
    assert info["exwhole.gemm_f32acc"].plugin == "exwhole 1.0.0"
    assert info["exfaulty.gemm_tailbug"].plugin == "exfaulty 0.0.1-broken"
    a = np.ones((2, 3), np.float16)
    with pytest.raises(KbenchError, match="selector.force"):
        api.gemm(a, np.ones((3, 4), np.float16),
                 selector=api.Selector(force="exwhole.gemm_f32acc"))


def test_a_plugin_is_never_the_default(host):
    case, conv = GEMMS[0], CONVS[0]
    out = host.run_gemm(case, inputs.gemm_inputs(case, "exact"), "gemm_scalar_f32acc",
                        force=False)
    assert not out.ran.is_plugin
    res = host.run_conv(conv, inputs.conv_inputs(conv, "exact"), "conv2d_direct_scalar_f32acc",
                        force=False)
    assert not res.ran.is_plugin


@pytest.mark.parametrize("spec", ["host", "worker:host"])
def test_whole_call_form_gives_the_scalar_reference_bits(spec, host, hworker):
    """exwhole accumulates as the scalar reference does (FP32 chain, bias last):
    through kbench's whole-call driver every bit must agree, with plain and
    its own packed B, strides, batches, 1 and 3 threads; the same for the
    direct convolution (groups, dilation, padding, special values)."""
    t = host if spec == "host" else hworker
    for case in GEMMS:
        for kind in ("normal", "specials"):
            inp = inputs.gemm_inputs(case, kind)
            ref = t.run_gemm(case, inp, "gemm_scalar_f32acc")
            for threads in (1, 3):
                out = t.run_gemm(case, inp, "exwhole.gemm_f32acc", api.Selector(threads=threads))
                assert out.error is None and not out.guard_detail, (case.name, out.error)
                assert out.ran.name == "exwhole.gemm_f32acc" and out.ran.plugin == "exwhole 1.0.0"
                for x, y in zip(_bits(ref.outputs), _bits(out.outputs), strict=True):
                    assert np.array_equal(x, y), f"{case.name} {kind} threads={threads}"
    for case in CONVS:
        inp = inputs.conv_inputs(case, "specials")
        ref = t.run_conv(case, inp, "conv2d_direct_scalar_f32acc")
        out = t.run_conv(case, inp, "exwhole.conv2d_direct_f32acc", api.Selector(threads=2))
        assert out.error is None and not out.guard_detail
        assert np.array_equal(_bits(ref.outputs)[0], _bits(out.outputs)[0]), case.name


def test_micro_kernel_form_on_this_machine(host):
    """exukref through kbench's micro-kernel driver: packed and plain LHS give the
    same bits (same kernel arithmetic), every case passes its oracle verdict, and
    3 threads change no bit; the indirect GEMM passes its convolutions."""
    for case in GEMMS:
        reals = {r.name: r for r in host.info().realizations}
        inp = inputs.gemm_inputs(case, "normal")
        a = host.run_gemm(case, inp, "exukref.gemm_4x8")
        b = host.run_gemm(case, inp, "exukref.gemm_4x8_plain_lhs", api.Selector(threads=3))
        assert a.error is None and b.error is None and not a.guard_detail
        for x, y in zip(_bits(a.outputs), _bits(b.outputs), strict=True):
            assert np.array_equal(x, y), case.name
        for kind in ("exact", "specials"):
            v = run_job(host, Job(case, kind, reals["exukref.gemm_4x8"], "host"))
            assert v.status == "pass", v.line()
    conv = {r.name: r for r in host.info().realizations}["exukref.conv2d_igemm_4x8"]
    for case in CONVS:
        if not applicable(case, conv):
            assert case.groups > 1
            continue
        for kind in ("exact", "normal", "specials"):
            v = run_job(host, Job(case, kind, conv, "host"))
            assert v.status == "pass", v.line()


def _micro_call(host, packed, n, k, bias=None, size=None, realization="exukref.gemm_4x8"):
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, size=(5, k)).astype(np.float16)
    c = GuardedBuffer(5, n, n)
    raw = np.full(packed.size + 64, 0xA5, np.uint8)
    raw[:packed.size] = packed
    p = api.RawProblem(a=a, lda=k, b=raw, ldb=0, c=c.view, ldc=n, bias=bias,
                       b_size=packed.size if size is None else size, b_is_packed=True,
                       b_is_backend_native_packed=True)
    with pytest.raises(ContractViolation) as exc:
        host.engine.gemm_raw(5, n, k, [p], api.Selector(force=realization))
    assert c.untouched(), "C was written although the call was refused"
    return exc.value.field


def test_a_micro_kernel_packed_b_is_checked_before_the_kernel_runs(host):
    """kbench packs B for a micro-kernel realization behind its own header and
    refuses a misused buffer, naming the field, with C untouched."""
    b = np.arange(21 * 40, dtype=np.float16).reshape(21, 40) % 7
    bias = np.ones(40, np.float16)
    packed = host.pack_plugin("exukref.gemm_4x8", b, bias)
    assert _micro_call(host, packed, 40, 20) == "B.k"
    assert _micro_call(host, packed, 32, 21) == "B.n"
    assert _micro_call(host, packed, 40, 21, realization="exukref.gemm_4x8_plain_lhs") \
        == "B.backend"
    assert _micro_call(host, packed, 40, 21, bias=bias) == "bias"
    assert _micro_call(host, packed, 40, 21, size=packed.size // 2) == "B.size"
    flipped = packed.copy()
    flipped[20] ^= 0x10  # a header byte (N): the header checksum no longer matches
    assert _micro_call(host, flipped, 40, 21) == "B.header_checksum"


def test_a_refusal_reaches_the_caller_with_the_plugins_reason(host):
    b = np.ones((21, 48), np.float16)
    packed = host.pack_plugin("exwhole.gemm_f32acc", b, None)
    c = GuardedBuffer(5, 40, 40)
    p = api.RawProblem(a=np.ones((5, 21), np.float16), lda=21, b=packed, ldb=0, c=c.view, ldc=40,
                       b_size=packed.size, b_is_packed=True, b_is_backend_native_packed=True)
    with pytest.raises(ContractViolation) as exc:
        host.engine.gemm_raw(5, 40, 21, [p], api.Selector(force="exwhole.gemm_f32acc"))
    assert exc.value.field == "plugin"
    assert "exwhole.gemm_f32acc refused the call (contract_violation): B.n: packed for another " \
           "N" in str(exc.value)
    assert c.untouched()


def test_packing_with_a_plugin_is_timed(host, hworker):
    b = np.ones((64, 80), np.float16)
    for t in (host, hworker):
        for name in ("exwhole.gemm_f32acc", "exukref.gemm_4x8"):
            res = t.engine.time_pack_plugin(name, 80, 64, b, 80, None,
                                            Timing(warmup=0, rounds=3, max_reps=2))
            assert len(res.times_ns) == 3 and all(x > 0 for x in res.times_ns)
            assert res.reps_per_round == 2


def test_a_plugin_call_that_comes_first_finds_its_plugin():
    # the plugins load in the host worker when it starts: a first call that is a plugin's
    # packing (no info() before it, as in a fresh xdist process) must start it, not refuse
    b = np.ones((64, 80), np.float16)
    for spec in ("host", "worker:host"):
        t = parse_target(spec, [lib("exwhole")])
        try:
            packed = t.engine.pack_plugin("exwhole.gemm_f32acc", 80, 64, b, 80)
            assert packed.size > 0
            res = t.engine.time_pack_plugin("exwhole.gemm_f32acc", 80, 64, b, 80, None,
                                            Timing(warmup=0, rounds=2, max_reps=1))
            assert len(res.times_ns) == 2
        finally:
            t.close()
    t = parse_target("host", [lib("exwhole")])
    try:
        assert t.engine.input_guards("exwhole.gemm_f32acc")
        assert not t.engine.input_guards("gemm_scalar_f32acc")
    finally:
        t.close()


def test_a_fingerprint_that_contradicts_the_declared_model_is_reported(host):
    reals = {r.name: r for r in host.info().realizations}
    case = GemmCase("pl_fp", 16, 40, 300, bias=True)
    v = run_job(host, Job(case, "normal", reals["misdeclared.gemm_says_fp16"], "host"))
    assert v.status == "pass" and v.accum_model.startswith("fp32")
    assert "fingerprint contradicts the declared model: declared fp16 accumulation" in v.message
    v = run_job(host, Job(case, "normal", reals["exwhole.gemm_f32acc"], "host"))
    assert v.accum_model.startswith("fp32") and "contradicts" not in v.message
    assert v.plugin == "exwhole 1.0.0" and "[plugin exwhole 1.0.0]" in v.line()


# ---- contract probes ------------------------------------------------------------------------


def test_contract_probes_on_this_machine(hworker):
    reals = {r.name: r for r in hworker.info().realizations if probes.probed(r) and r.is_plugin}
    assert set(reals) == {"exwhole.gemm_f32acc", "exfaulty.gemm_tailbug", "exukref.gemm_4x8",
                          "exukref.gemm_4x8_plain_lhs"}
    found = {(name, p): probes.run_probe(hworker.engine, r, p, "worker:host").finding
             for name, r in reals.items() for p in probes.PROBE_NAMES}
    for name in ("exwhole.gemm_f32acc", "exukref.gemm_4x8"):
        for p in ("other_n", "other_k", "bias_flag", "truncated"):
            assert found[(name, p)] == probes.REFUSED, (name, p)
        # this machine has no vector length to switch: not applicable, and never asked for
        assert found[(name, "svl_pack_lo")] == probes.NOT_APPLICABLE
        assert probes.probe_names(reals[name]) == probes.MISUSE_NAMES
    for p in ("other_n", "bias_flag", "truncated"):
        assert found[("exfaulty.gemm_tailbug", p)] == probes.SILENTLY_WRONG, p
    # its packed B is B's rows after the bias: K + 3 rows still hold B in front
    assert found[("exfaulty.gemm_tailbug", "other_k")] == probes.ACCEPTED


def test_a_probe_that_kills_the_worker_is_reported_as_a_crash(hworker):
    r = next(r for r in hworker.info().realizations if r.name == "exwhole.gemm_f32acc")

    class Crashing:
        """The host worker, except that a call with a truncated B kills it."""

        def __getattr__(self, name):
            return getattr(hworker.engine, name)

        def gemm_raw(self, m, n, k, problems, selector=None, timing=None):
            if problems[0].b_size * 2 < problems[0].b.size - 4096:
                hworker.engine.kill()
                raise WorkerCrashed("worker: died with signal SIGSEGV during GEMM", "worker")
            return hworker.engine.gemm_raw(m, n, k, problems, selector, timing)

    res = probes.run_probe(Crashing(), r, "truncated", "worker:host")
    assert res.finding == probes.CRASHED and "SIGSEGV" in res.detail
    v = res.verdict()
    assert v.status == "error" and v.plugin == "exwhole 1.0.0" and v.suite == probes.SUITE
    # the next call starts a fresh worker with the plugins loaded again
    assert probes.run_probe(hworker.engine, r, "other_n", "worker:host").finding == probes.REFUSED


# ---- tuning and dispatch tables ---------------------------------------------------------------


def test_tuning_times_plugins_and_a_table_can_choose_one(host, tmp_path):
    cases = [("pl", GemmCase("pl_tune", 8, 40, 24, bias=True))]
    res = tune.tune(host, cases, PerfSettings(warmup=0, rounds=2, min_round_ns=0))
    sr = res.shapes[0]
    assert "exwhole.gemm_f32acc" in sr.verdicts and sr.verdicts["exwhole.gemm_f32acc"].rounds == 2
    assert sr.default == "gemm_scalar_f32acc"
    table = res.table
    table["rules"][0]["realization"] = "exwhole.gemm_f32acc"
    sel = api.Selector(table=api.DispatchTable(json.dumps(table)))
    for spec in ("host", "worker:host"):
        t = host if spec == "host" else parse_target(spec, [lib("exwhole")])
        case = GemmCase("pl_tune2", 9, 33, 20)
        out = t.run_gemm(case, inputs.gemm_inputs(case, "exact"), "gemm_scalar_f32acc", sel,
                         force=False)
        assert out.error is None and out.ran.name == "exwhole.gemm_f32acc", spec
        # B packed in our scalar layout still goes to ours, though the table names the plugin
        ours = GemmCase("pl_tune3", 9, 33, 20, b_form="native", bias=True)
        out = t.run_gemm(ours, inputs.gemm_inputs(ours, "exact"), "gemm_scalar_f32acc", sel,
                         force=False)
        assert out.error is None and out.ran.name == "gemm_scalar_f32acc", (spec, out.error)
        # and B packed by the plugin goes to the plugin the table names
        out = t.run_gemm(ours, inputs.gemm_inputs(ours, "exact"), "exwhole.gemm_f32acc", sel,
                         force=False)
        assert out.error is None and out.ran.name == "exwhole.gemm_f32acc", (spec, out.error)
        if t is not host:
            t.close()
