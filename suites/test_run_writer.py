"""The run writer word for word: what a new run folder holds at once (the
header, an empty verdict list, a run.json that says incomplete), what each
verdict adds, how a write error is kept (the first one, the verdicts lost,
nothing more written) and what close() records; every refusal names the
folder and the cause."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from kbench.judge.verdict import Verdict
from kbench.results import store


def _verdict(case: str = "c1", **kw: Any) -> Verdict:
    args: dict[str, Any] = dict(
        case=case, op="gemm", shape="m8n8k8", kind="exact", target="host", backend="scalar",
        realization="gemm_scalar_f32acc", kernel="k", accum="fp32", k=8, m=8, n=8,
        b_form="plain", vector_bits=0, status="pass", catalog="cat", suite="correctness")
    args.update(kw)
    return Verdict(**args)


class _Broken:
    """A file whose writes fail as a full disk does."""

    def __init__(self, fail_close: bool = False) -> None:
        self.fail_close = fail_close
        self.closed = False

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")

    def tell(self) -> int:
        return 0

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True
        if self.fail_close:
            raise OSError(5, "Input/output error")


def _meta(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "run.json").read_text())


def test_a_new_run_folder_holds_the_header_and_an_incomplete_run_json(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b" / "run"
    metadata = {"date": "2026-01-01", "host": "h"}
    w = store.RunWriter(folder, metadata)
    assert metadata == {"date": "2026-01-01", "host": "h"}  # the caller's dict is untouched
    assert (w.folder, w.count, w.lost, w.error) == (folder, 0, 0, None)
    assert (folder / "results.csv").read_bytes() == (",".join(store.COLUMNS) + "\r\n").encode()
    assert (folder / "verdicts.txt").read_text() == ""
    assert (folder / "run.json").read_text() == json.dumps(
        {"date": "2026-01-01", "host": "h", "complete": False}, indent=2)
    assert not (folder / "run.json.tmp").exists() and not (folder / "failures.csv").exists()
    w.close(True)


def test_each_verdict_is_one_row_and_one_line(tmp_path: Path) -> None:
    w = store.RunWriter(tmp_path / "r", {})
    a, b = _verdict("c1", message="m, with a comma", kernel=None), _verdict("c2", status="fail")
    w.add_all([a, b])
    assert w.count == 2 and w.lost == 0
    with open(tmp_path / "r" / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["case"] for r in rows] == ["c1", "c2"]
    assert rows[0]["message"] == "m, with a comma" and rows[1]["status"] == "fail"
    # a field the verdict leaves None is written empty, never "None"
    assert rows[0]["kernel"] == "" and rows[1]["kernel"] == "k"
    assert (tmp_path / "r" / "verdicts.txt").read_text() == a.line() + "\n" + b.line() + "\n"
    w.close(True, summary={"pass": 1, "fail": 1})
    assert _meta(tmp_path / "r") == {"complete": True, "results": 2,
                                     "summary": {"pass": 1, "fail": 1}}


def test_close_records_an_incomplete_run(tmp_path: Path) -> None:
    w = store.RunWriter(tmp_path / "r", {"x": 1})
    w.add(_verdict())
    w.close(False)
    assert _meta(tmp_path / "r") == {"x": 1, "complete": False, "results": 1}


def test_a_failed_write_keeps_the_first_error_and_counts_what_is_lost(tmp_path: Path) -> None:
    w = store.RunWriter(tmp_path / "r", {})
    w.add(_verdict("c1"))
    good = w._csv
    w._csv = _Broken()
    w.add(_verdict("c2"))
    first = w.error
    assert isinstance(first, OSError) and first.errno == 28
    assert (w.count, w.lost) == (1, 1)
    w._csv = good  # the disk has room again: still nothing more is written
    w.add(_verdict("c3"))
    w.add_failure(_verdict("c3", status="fail"), "kbench run")
    assert (w.count, w.lost, w.error) == (1, 2, first)
    w.close(True)
    meta = _meta(tmp_path / "r")
    assert meta == {"complete": False, "results": 1, "write_error": "No space left on device",
                    "verdicts_not_written": 2}
    text = (tmp_path / "r" / "results.csv").read_text().splitlines()
    assert len(text) == 2 and "c3" not in (tmp_path / "r" / "verdicts.txt").read_text()
    assert not (tmp_path / "r" / "failures.csv").exists()


def test_a_verdict_line_that_cannot_be_written_is_lost_too(tmp_path: Path) -> None:
    w = store.RunWriter(tmp_path / "r", {})
    w._lines = _Broken()
    w.add(_verdict())
    assert (w.count, w.lost) == (0, 1) and w.error.errno == 28
    w.close(False)


def test_an_error_without_a_message_is_recorded_as_its_text(tmp_path: Path) -> None:
    w = store.RunWriter(tmp_path / "r", {})
    w.error = OSError("gone")
    w.close(True)
    assert _meta(tmp_path / "r")["write_error"] == "gone"
    assert _meta(tmp_path / "r")["verdicts_not_written"] == 0


def test_a_run_json_that_cannot_be_replaced_is_the_error_and_leaves_no_tmp(
        tmp_path: Path, monkeypatch) -> None:
    w = store.RunWriter(tmp_path / "r", {})
    real = Path.replace

    def refuse(self: Path, target: Any) -> Any:
        if self.name == "run.json.tmp":
            raise OSError(30, "Read-only file system")
        return real(self, target)
    monkeypatch.setattr(Path, "replace", refuse)
    w.add(_verdict())
    w.close(True)
    assert w.error.errno == 30 and not (tmp_path / "r" / "run.json.tmp").exists()
    assert _meta(tmp_path / "r") == {"complete": False}  # the last run.json that was written


def test_an_error_closing_a_file_is_kept_unless_one_came_first(tmp_path: Path) -> None:
    w = store.RunWriter(tmp_path / "r", {})
    real = w._lines
    w._lines = _Broken(fail_close=True)
    w.close(True)
    real.close()
    assert w.error.errno == 5 and w._lines.closed and w._csv.closed
    assert _meta(tmp_path / "r")["complete"] is True  # written before the files closed
    v = store.RunWriter(tmp_path / "v", {})
    v.error = OSError(28, "No space left on device")
    real = v._lines
    v._lines = _Broken(fail_close=True)
    v.close(False)
    real.close()
    assert v.error.errno == 28


def test_a_folder_already_holding_a_run_is_refused(tmp_path: Path) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "results.csv").write_text("x\n")
    with pytest.raises(store.RunDirError) as err:
        store.RunWriter(tmp_path / "r", {})
    assert str(err.value) == (f"{tmp_path / 'r'} already holds a run (results.csv): runs never "
                              "share a folder")
    assert (tmp_path / "r" / "results.csv").read_text() == "x\n"


def test_a_folder_that_cannot_be_made_is_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(store.RunDirError) as err:
        store.RunWriter(tmp_path / "file" / "run", {})
    folder = tmp_path / "file" / "run"
    assert str(err.value) == f"cannot write the run folder {folder}: Not a directory"


def test_a_run_json_that_cannot_be_written_at_the_start_is_refused(tmp_path: Path,
                                                                     monkeypatch) -> None:
    def refuse(self: store.RunWriter) -> None:
        self.error = OSError(28, "No space left on device")
    monkeypatch.setattr(store.RunWriter, "_write_json", refuse)
    with pytest.raises(store.RunDirError) as err:
        store.RunWriter(tmp_path / "r", {})
    assert str(err.value) == (f"cannot write the run folder {tmp_path / 'r'}: "
                              "No space left on device")


def test_a_verdict_list_that_cannot_be_opened_is_refused(tmp_path: Path) -> None:
    (tmp_path / "r" / "verdicts.txt").mkdir(parents=True)
    with pytest.raises(store.RunDirError) as err:
        store.RunWriter(tmp_path / "r", {})
    assert str(err.value) == f"cannot write the run folder {tmp_path / 'r'}: Is a directory"
    assert _meta(tmp_path / "r") == {"complete": False, "results": 0}  # never complete


def test_metadata_json_cannot_hold_is_written_as_text(tmp_path: Path) -> None:
    w = store.RunWriter(tmp_path / "r", {"where": Path("/x/y"), "n": 1})
    assert _meta(tmp_path / "r") == {"where": "/x/y", "n": 1, "complete": False}
    w.close(True)


def test_a_run_json_that_cannot_be_written_at_all_is_the_error(tmp_path: Path,
                                                                monkeypatch) -> None:
    w = store.RunWriter(tmp_path / "r", {})
    real = Path.write_text

    def refuse(self: Path, *args: Any, **kw: Any) -> Any:
        if self.name == "run.json.tmp":
            raise OSError(28, "No space left on device")
        return real(self, *args, **kw)
    monkeypatch.setattr(Path, "write_text", refuse)
    w.close(True)  # the temporary file never existed: nothing to remove, no exception
    assert w.error.errno == 28 and _meta(tmp_path / "r") == {"complete": False}


class _Interrupted:
    """A file whose write is interrupted (Ctrl-C or SIGTERM raise
    KeyboardInterrupt) after `keep` of the real file's writes went through."""

    def __init__(self, real: Any, keep: int) -> None:
        self.real, self.keep = real, keep

    def write(self, text: str) -> int:
        if self.keep == 0:
            raise KeyboardInterrupt
        self.keep -= 1
        return self.real.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


@pytest.mark.parametrize(("where", "counted"), [("verdicts.txt", 1), ("results.csv", 0)])
def test_an_interrupt_in_the_middle_of_a_verdict_counts_exactly_the_rows_written(
        tmp_path: Path, where: str, counted: int) -> None:
    """Before: an interrupt after a verdict's row reached results.csv but
    before it was counted left run.json one result short of the table."""
    from kbench.results.runfolder import load_run
    w = store.RunWriter(tmp_path / "r", {})
    w.add(_verdict("c1"))
    if where == "verdicts.txt":  # the row is written, its verdict line is not
        w._lines = _Interrupted(w._lines, 0)
    else:  # nothing of the verdict is written
        w._csv = _Interrupted(w._csv, 0)
    with pytest.raises(KeyboardInterrupt):
        w.add(_verdict("c2"))
    assert (w.count, w.lost, w.error) == (1 + counted, 0, None)
    w._csv, w._lines = getattr(w._csv, "real", w._csv), getattr(w._lines, "real", w._lines)
    w.close(False)
    run = load_run(tmp_path / "r")
    assert _meta(tmp_path / "r")["results"] == len(run.results) == 1 + counted
    assert run.defects == []


def test_an_interrupt_before_anything_of_a_verdict_is_written_is_raised_as_it_came(
        tmp_path: Path) -> None:
    class _TellInterrupted(_Interrupted):
        asked = 0

        def tell(self) -> int:  # the interrupt lands in the first one
            self.asked += 1
            if self.asked == 1:
                raise KeyboardInterrupt
            return self.real.tell()

    w = store.RunWriter(tmp_path / "r", {})
    real = w._csv
    w._csv = _TellInterrupted(real, 1)
    with pytest.raises(KeyboardInterrupt):
        w.add(_verdict("c1"))
    assert (w.count, w.lost, w.error) == (0, 0, None)
    w._csv = real
    w.close(False)
    assert _meta(tmp_path / "r")["results"] == 0
    assert (tmp_path / "r" / "results.csv").read_text().count("\n") == 1  # the header alone
