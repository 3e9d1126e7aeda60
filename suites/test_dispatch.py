"""Tuned dispatch tables: `kbench tune` writes one, the native dispatcher
follows it (the realization reported for each case is the table's choice,
also where that is not the default order's), and a table for another
machine or library version is refused with a message naming the field."""

import copy
import json

import pytest

from kbench.errors import InvalidArgument
from kbench.harness import runner
from kbench.harness.perf import PerfSettings
from kbench.harness.tune import default_realization, table_choice, tune
from kbench.judge.verdict import PASS
from kbench.native import api
from kbench.native.api import DispatchTable, Selector
from kbench.problems.catalog import load_catalog, resolve_catalog
from kbench.targets.spec import parse_target

FAST = PerfSettings(warmup=0, rounds=2, min_round_ns=0)


@pytest.fixture(scope="module", params=["host", "worker:host"])
def target(request):
    t = parse_target(request.param)
    yield t
    t.close()


@pytest.fixture(scope="module")
def smoke():
    cat = load_catalog(resolve_catalog("smoke"))
    return [(cat.name, c) for c in cat.cases]


@pytest.fixture(scope="module")
def tuned(target, smoke):
    return tune(target, smoke, FAST)


def _run_all(target, cases, table_json):
    table = DispatchTable(json.dumps(table_json))
    reals = {r.name: r for r in target.info().realizations}
    ran = {}
    for _, case in cases:
        name = table_choice(table_json, case) or default_realization(list(reals.values()), case)
        job = runner.Job(case, "exact", reals[name], target.name)
        v = runner.run_job(target, job, Selector(table=table), force=False)
        assert v.status == PASS, v.line()
        ran[case.name] = v.realization
    return ran


def test_tune_writes_a_table_with_winners_and_runners_up(tuned, smoke):
    t = tuned.table
    assert t["kbench_dispatch_table"] == 1 and t["rules"]
    assert t["fingerprint"]["arch"]
    for rule in t["rules"]:
        assert rule["op"] in ("gemm", "conv2d") and rule["time_ns"] > 0
        timed = {name for sr in tuned.shapes for name in sr.times()}
        assert rule["realization"] in timed
    # every tuned shape is covered by some rule (its own class)
    for _, case in smoke:
        assert table_choice(t, case) is not None, case.name


def test_the_dispatcher_follows_the_tuned_table(target, tuned, smoke):
    ran = _run_all(target, smoke, tuned.table)
    for _, case in smoke:
        assert ran[case.name] == table_choice(tuned.table, case)


def test_a_table_choice_that_is_not_the_default_is_followed(target, smoke):
    """Hand-made table: every 3x3 stride-1 convolution to the direct kernel
    (the default order would pick im2col+GEMM first), every GEMM to scalar."""
    info = target.info()
    table = {"kbench_dispatch_table": 1, "library_version": info.library_version,
             "fingerprint": {"arch": info.arch, "cpu_features": info.cpu_features,
                             "sme_vector_bits": info.sme_vector_bits},
             "rules": [{"op": "conv2d", "class": {"kh": 3, "kw": 3, "stride_h": 1,
                                                  "stride_w": 1},
                        "realization": "conv2d_direct_scalar_f32acc"},
                       {"op": "gemm", "class": {}, "realization": "gemm_scalar_f32acc"}]}
    convs = [(n, c) for n, c in smoke if c.op == "conv2d" and c.kh == c.kw == 3
             and c.stride == (1, 1)]
    assert convs
    default = default_realization(info.realizations, convs[0][1])
    assert default != "conv2d_direct_scalar_f32acc"
    ran = _run_all(target, convs, table)
    assert set(ran.values()) == {"conv2d_direct_scalar_f32acc"}


@pytest.mark.parametrize("field,change", [
    ("table.library_version", lambda t: t.update(library_version="0.0.0-other")),
    ("table.fingerprint.arch", lambda t: t["fingerprint"].update(arch="riscv64")),
    ("table.fingerprint.cpu_features",
     lambda t: t["fingerprint"].update(cpu_features=["fp16", "sme", "sme2"])),
    ("table.fingerprint.sme_vector_bits",
     lambda t: t["fingerprint"].update(sme_vector_bits=4096)),
    ("table.rules", lambda t: t.pop("rules")),
])
def test_a_table_for_another_machine_or_version_is_refused(tuned, field, change):
    bad = copy.deepcopy(tuned.table)
    change(bad)
    with pytest.raises(InvalidArgument, match=field.replace(".", r"\.")) as exc:
        DispatchTable(json.dumps(bad)).rules(api.load())
    assert exc.value.field == field


@pytest.mark.parametrize("text", ["", "{", "[1, 2]", '{"kbench_dispatch_table": 2}'])
def test_malformed_tables_are_refused(text):
    with pytest.raises(InvalidArgument, match="table"):
        DispatchTable(text).rules(api.load())
