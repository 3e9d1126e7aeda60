"""A run folder without results.csv reads as an empty results frame of the
same columns and column types as a results.csv holding only its header, so
every reader (compare, gate, report) treats both alike."""

from __future__ import annotations

import json
from pathlib import Path

from kbench.results import runfolder as rf


def test_a_missing_results_file_reads_like_a_header_only_one(tmp_path: Path) -> None:
    missing, header = tmp_path / "missing", tmp_path / "header"
    for d in (missing, header):
        d.mkdir()
        (d / "run.json").write_text(json.dumps({"results": 0}))
    (header / "results.csv").write_text(",".join(rf.COLUMNS) + "\n")
    a, b = rf.load_run(missing), rf.load_run(header)
    assert a.defects == ["results.csv is missing"] and b.defects == []
    assert list(a.results.columns) == list(b.results.columns) == [*rf.COLUMNS, "round_times"]
    assert a.results.dtypes.to_dict() == b.results.dtypes.to_dict()
    kinds = {str(t) for t in a.results.dtypes}
    assert {"float64", "int64", "bool", "object"} <= kinds
    assert a.results.empty and not a.has_results
