"""The hostile-input catalogue (fixtures/hostile/, see its README): each case has one expected
one-line error or one expected partial result, asserted exactly. Cases too big or too odd to
commit (a 100 MB line, symlink loops, unreadable files, duplicate run ids, hostile tars) are
built at test time."""
from __future__ import annotations

import io
import json
import os
import shutil
import tarfile
from pathlib import Path

import duckdb
import pytest

from forensics import importers, ingest
from forensics.cli import cli
from forensics.errors import InputError
from forensics.ingest import RunFile, RunSource, ingest_paths, read_run
from forensics.scan import scan_file

from .conftest import CORPUS, FIXTURES

HOSTILE = FIXTURES / "hostile"
STARTUP = CORPUS / "vllm" / "02_gptoss120b-negative-kv-memory.log"


def _facts(res, shift: int = 0) -> dict:
    return {k: (f.value, f.evidence.line - shift) for k, f in res.effective.items()}


# What the clean startup log yields, (value, line) per effective fact: a damaged copy must
# give the same (computed, so that a new pattern does not break the catalogue).
STARTUP_FACTS = _facts(scan_file(STARTUP))
assert {k: STARTUP_FACTS[k] for k in ("weights_gib", "kv_cache_gib")} == {
    "weights_gib": (65.9651, 2), "kv_cache_gib": (-2.14, 7)}


def q(db: Path, sql: str):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _one_line_error(runner, *args: str) -> str:
    res = runner.invoke(cli, list(args))
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in res.output, res.output
    return lines[0]


# ---------------------------------------------------------------- logs

@pytest.mark.parametrize("name, kind, tool, after", [
    ("truncated.log.gz", "gzip", "zcat", 136184),
    ("truncated.log.zst", "zstd", "zstdcat", 131072),
])
def test_truncated_compressed_log_is_one_line_error_for_scan(runner, monkeypatch, name, kind, tool, after) -> None:
    monkeypatch.chdir(HOSTILE)
    reason = ("Compressed file ended before the end-of-stream marker was reached" if kind == "gzip"
              else "the zstd frame ends before its end mark")
    assert _one_line_error(runner, "scan", name) == (
        f"Error: {name} is a truncated or corrupt {kind} file: decompression failed after {after} bytes of log "
        f"({reason}); recover the readable part with `{tool} {name} > part.log` and scan that")


@pytest.mark.parametrize("name", ["truncated.log.gz", "truncated.log.zst"])
def test_truncated_compressed_log_keeps_its_facts_in_ingest(tmp_path: Path, name: str) -> None:
    run = tmp_path / "camp" / "r1"
    run.mkdir(parents=True)
    shutil.copy(HOSTILE / name, run / name)
    db = tmp_path / "a.duckdb"
    rep = ingest_paths(db, [run])
    assert rep.added == ["r1"] and rep.failed == []
    facts = dict(q(db, "SELECT name, value_json FROM facts WHERE section = 'effective'"))
    assert facts == {k: json.dumps(v) for k, (v, _) in STARTUP_FACTS.items()}
    [(file, line, message)] = q(db, "SELECT file, line, message FROM problems")
    kind, reason, after, lines = (("gzip", "Compressed file ended before the end-of-stream marker was reached", 136184, 1994)
                                  if name.endswith(".gz") else
                                  ("zstd", "the zstd frame ends before its end mark", 131072, 1919))
    assert (file, line) == (f"r1/{name}", lines)
    assert message == (f"r1/{name}: truncated or corrupt {kind} data after {after} bytes of log ({reason}); "
                       "facts up to the cut are kept")


def test_log_cut_mid_line_reads_every_complete_line() -> None:
    res = scan_file(HOSTILE / "cut-mid-line.log")
    assert res.outcome == "failed_startup" and res.lines == 9
    assert _facts(res) == STARTUP_FACTS
    assert [e.evidence.line for e in res.errors] == [8]


def test_binary_junk_inside_a_log_costs_only_its_own_lines() -> None:
    res = scan_file(HOSTILE / "binary-junk.log")
    # 1 KiB of all byte values plus NULs sits after line 4: it holds 4 newlines + the closing one
    assert res.outcome == "failed_startup" and res.lines == 14
    assert _facts(res) == {k: (v, ln if ln <= 4 else ln + 5) for k, (v, ln) in STARTUP_FACTS.items()}
    assert [e.evidence.line for e in res.errors] == [13]


def test_hundred_megabyte_line_then_a_real_log(tmp_path: Path) -> None:
    big = tmp_path / "huge.log"
    with big.open("wb") as fh:
        fh.write(b"INFO 01-01 00:00:00 [x.py:1] ")
        fh.write(b"a" * (100 << 20))
        fh.write(b"\n")
        fh.write(STARTUP.read_bytes())
    res = scan_file(big)
    big.unlink()
    assert res.outcome == "failed_startup" and res.lines == 10
    assert _facts(res, shift=1) == STARTUP_FACTS  # every fact still cites its own line
    assert [e.evidence.line for e in res.errors] == [9]


# ---------------------------------------------------------------- results

def _read(name: str):
    data = (HOSTILE / name).read_bytes()
    imp = importers.detect(data[: importers.HEAD_BYTES], name)
    return imp, imp.read(data, name)


def test_json_result_cut_mid_object() -> None:
    imp, res = _read("result-cut-mid-object.json")
    assert imp.TOOL == "vllm_bench"
    assert [(r["line"], r["request_rate"]) for r in res.bench_points] == [(1, 10.0), (2, 20.0)]
    assert [(p["file"], p["line"], p["record_index"], p["message"]) for p in res.problems] == [
        ("result-cut-mid-object.json", 3, 2, "record 2: invalid JSON (Unterminated string starting at at line 3)")]


def test_nan_and_infinity_become_null_and_the_infinite_rate_a_flag() -> None:
    _, res = _read("nan-infinity.json")
    assert res.problems == []
    [row] = res.bench_points
    assert (row["mean_ttft_ms"], row["median_ttft_ms"], row["p99_ttft_ms"]) == (None, None, None)
    assert (row["request_rate"], row["request_rate_inf"], row["request_rate_raw"]) == (None, True, "Infinity")
    assert row["completed"] == 300


def test_negative_and_absurd_numbers_are_kept_or_nulled_never_fatal(tmp_path: Path) -> None:
    _, res = _read("absurd-numbers.json")
    assert res.problems == []
    [row] = res.bench_points
    # negative values are kept as written (rules judge them); what a BIGINT cannot hold,
    # a fractional count or a non-number becomes NULL
    assert (row["completed"], row["duration_s"], row["mean_ttft_ms"]) == (-5, -1.0, 1e308)
    assert (row["num_prompts"], row["total_input_tokens"], row["output_throughput"]) == (None, None, None)
    run = tmp_path / "c" / "r1"
    run.mkdir(parents=True)
    shutil.copy(HOSTILE / "absurd-numbers.json", run / "bench.json")
    db = tmp_path / "a.duckdb"
    assert ingest_paths(db, [run]).added == ["r1"]  # used to die with OverflowError on 10**30
    assert q(db, "SELECT num_prompts, completed FROM bench_points") == [(None, -5)]


def test_csv_with_a_repeated_header() -> None:
    imp, res = _read("repeated-header.csv")
    assert imp.TOOL == "nvidia_smi"
    assert [(r["line"], r["name"]) for r in res.gpu_samples] == [
        (2, "GeForce GTX 1080 Ti"), (3, "GeForce GTX 1060 6GB"), (5, "GeForce GTX 1080 Ti"), (6, "GeForce GTX 1060 6GB")]
    assert [(p["line"], p["message"]) for p in res.problems] == [(4, "repeated header line skipped")]


# ---------------------------------------------------------------- run folders

def _run(root: Path, name: str, log: Path = STARTUP) -> Path:
    d = root / name
    d.mkdir(parents=True)
    shutil.copy(log, d / "server.log")
    return d


def test_duplicate_run_ids_the_later_folder_replaces_and_is_reported(tmp_path: Path, runner) -> None:
    _run(tmp_path / "camp-a", "r1")
    _run(tmp_path / "camp-b", "r1", CORPUS / "vllm" / "07_v1-engine000-metrics-kv-usage-climb.log")
    db = tmp_path / "a.duckdb"
    res = runner.invoke(cli, ["ingest", str(tmp_path / "camp-a"), str(tmp_path / "camp-b"), "--archive", str(db)])
    assert res.exit_code == 0
    assert res.output.splitlines()[0].startswith(f"{db}: 1 added, 1 replaced, 0 unchanged, 0 failed")
    assert q(db, "SELECT run_id, campaign, outcome FROM runs") == [("r1", "camp-b", "ready")]
    # the replaced run leaves no rows behind
    assert q(db, "SELECT DISTINCT file FROM facts") == [("r1/server.log",)]
    assert q(db, "SELECT count(*) FROM errors") == [(0,)]
    # identical content under another campaign is unchanged: the first path stays
    shutil.rmtree(tmp_path / "camp-a")
    shutil.copytree(tmp_path / "camp-b", tmp_path / "camp-c")
    rep = ingest_paths(db, [tmp_path / "camp-c"])
    assert rep.unchanged == ["r1"]
    assert q(db, "SELECT campaign FROM runs") == [("camp-b",)]


def test_an_empty_run_folder_is_not_a_run(tmp_path: Path, runner) -> None:
    camp = tmp_path / "camp"
    _run(camp, "r1")
    (camp / "r2-empty").mkdir()
    (camp / "r3-only-empty-subdir" / "sub").mkdir(parents=True)
    db = tmp_path / "a.duckdb"
    assert ingest_paths(db, [camp]).added == ["r1"]
    res = runner.invoke(cli, ["ingest", str(camp / "r2-empty"), "--archive", str(db)])
    assert (res.exit_code, res.output) == (0, f"{db}: 0 added, 0 replaced, 0 unchanged, 0 failed\n")


def test_symlink_loops_and_links_out_are_not_followed(tmp_path: Path) -> None:
    camp = tmp_path / "camp"
    run = _run(camp, "r1")
    (run / "self").symlink_to(run / "self")            # a link to itself
    (run / "up").symlink_to(camp, target_is_directory=True)  # a directory loop
    (run / "passwd").symlink_to("/etc/passwd")          # a file outside the run
    (run / "a").symlink_to(run / "b")                   # a <-> b
    (run / "b").symlink_to(run / "a")
    db = tmp_path / "a.duckdb"
    rep = ingest_paths(db, [camp])
    assert rep.added == ["r1"]
    assert q(db, "SELECT path FROM files") == [("r1/server.log",)]


def test_unreadable_file_is_a_problem_and_the_run_still_reads(tmp_path: Path) -> None:
    """Simulated (works as root): the opener raises PermissionError as open() would."""
    run = _run(tmp_path / "camp", "r1")

    def denied() -> io.BufferedIOBase:
        raise PermissionError(13, "Permission denied")

    src = RunSource("r1", "camp", str(run), [RunFile("server.log", STARTUP.stat().st_size,
                                                     lambda: open(run / "server.log", "rb")),
                                             RunFile("secret.json", 10, denied)])
    data = read_run(src)
    assert data.tables["problems"] == [{"file": "r1/secret.json", "message": "unreadable: Permission denied; file skipped"}]
    clean = read_run(RunSource("r1", "camp", str(run), src.files[:1]))
    assert data.tables["facts"] == clean.tables["facts"] and data.run_row["outcome"] == "failed_startup"


@pytest.mark.skipif(os.geteuid() == 0, reason="runs as root: chmod 000 does not stop root from reading")
def test_chmod_000_file(tmp_path: Path, runner) -> None:
    run = _run(tmp_path / "camp", "r1")
    secret = run / "bench.json"
    secret.write_text("{}")
    secret.chmod(0)
    db = tmp_path / "a.duckdb"
    rep = ingest_paths(db, [run])
    assert rep.added == ["r1"]
    assert q(db, "SELECT message FROM problems") == [("unreadable: Permission denied; file skipped",)]
    log = tmp_path / "x.log"
    log.write_text("x")
    log.chmod(0)
    assert _one_line_error(runner, "scan", str(log)).startswith(f"Error: cannot open {log}: Permission denied")


# ---------------------------------------------------------------- tar archives

def _add(tf: tarfile.TarFile, name: str, data: bytes = b"", **kw) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    for k, v in kw.items():
        setattr(info, k, v)
    tf.addfile(info, io.BytesIO(data) if data else None)


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_hostile_tar_members_are_refused_and_nothing_lands_outside(tmp_path: Path, monkeypatch) -> None:
    work = tmp_path / "work" / "deep"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    log = STARTUP.read_bytes()
    out = tmp_path / "evil.tar"
    with tarfile.open(out, "w") as tf:
        _add(tf, "/tmp/forensics-abs-escape/server.log", log)
        _add(tf, "../../escape/server.log", log)
        _add(tf, "camp/r1/../../../escape2.log", log)
        _add(tf, "camp/r1/link.log", type=tarfile.SYMTYPE, linkname="/etc/passwd")
        _add(tf, "camp/r1/hard.log", type=tarfile.LNKTYPE, linkname="../../etc/passwd")
        _add(tf, "camp/r1/dev", type=tarfile.CHRTYPE, devmajor=1, devminor=3)
        _add(tf, "camp/r1/fifo", type=tarfile.FIFOTYPE)
        _add(tf, "camp/r1/server.log", log)
    before = _tree(tmp_path)
    db = tmp_path / "a.duckdb"
    rep = ingest_paths(db, [out])
    assert rep.added == ["r1"]
    assert q(db, "SELECT path FROM files") == [("r1/server.log",)]
    assert _tree(tmp_path) - before == {"a.duckdb"}
    assert not Path("/tmp/forensics-abs-escape").exists() and not (tmp_path / "escape").exists()


def test_member_over_the_size_limit_is_refused(tmp_path: Path, monkeypatch, runner) -> None:
    monkeypatch.setattr(ingest, "MAX_MEMBER_BYTES", 1 << 20)
    out = tmp_path / "bomb.tar.gz"
    with tarfile.open(out, "w:gz") as tf:  # 8 MiB of zeros: a 8 KiB gzip that inflates 1000x
        _add(tf, "camp/r1/server.log", b"\0" * (8 << 20))
    assert out.stat().st_size < 64 << 10
    with pytest.raises(InputError) as exc:
        ingest_paths(tmp_path / "a.duckdb", [out])
    assert exc.value.one_line() == (f"{out}: member camp/r1/server.log is 8388608 bytes: over the member size limit; "
                                    "members above 0 GiB are refused as possible bombs")


def test_archive_inflating_past_the_total_limit_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(ingest, "MAX_TOTAL_BYTES", 3 << 20)
    out = tmp_path / "bomb.tar.gz"
    with tarfile.open(out, "w:gz") as tf:
        for i in range(8):
            _add(tf, f"camp/r{i}/server.log", b"\0" * (1 << 20))
    before = _tree(tmp_path)
    with pytest.raises(InputError) as exc:
        ingest_paths(tmp_path / "a.duckdb", [out])
    assert exc.value.one_line() == f"{out} inflates past 0 GiB: possible decompression bomb"
    # runs before the limit were committed whole (one transaction each); nothing else was written
    assert _tree(tmp_path) - before <= {"a.duckdb", "a.duckdb.wal"}


def test_corrupt_tar_is_one_line_error(tmp_path: Path, runner) -> None:
    good = tmp_path / "good.tar.gz"
    with tarfile.open(good, "w:gz") as tf:
        _add(tf, "camp/r1/server.log", STARTUP.read_bytes() * 50)
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    line = _one_line_error(runner, "ingest", str(cut), "--archive", str(tmp_path / "a.duckdb"))
    assert line.startswith(f"Error: cannot read archive {cut}: ") and "is it a complete .tar" in line


# ---------------------------------------------------------------- secrets

def test_scan_json_does_not_leak_hf_tokens(runner, tmp_path: Path) -> None:
    pytest.importorskip("forensics.redact")
    token = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345"
    startup = STARTUP.read_text().splitlines(keepends=True)
    log = tmp_path / "server.log"
    log.write_text("".join(startup[:7]) +
                   "(EngineCore_0 pid=5839) INFO 08-20 18:04:02 [utils.py:326] non-default args: "
                   f"{{'model': 'openai/gpt-oss-120b', 'hf_token': '{token}', 'max_num_seqs': 64}}\n"
                   f"huggingface_hub.errors.GatedRepoError: 401 Client Error. token={token}\n")
    res = runner.invoke(cli, ["scan", "--format", "json", str(log)])
    assert res.exit_code in (0, 1), res.output
    doc = json.loads(res.output)
    assert doc["errors"]  # the line with the token is in the output, so redaction is what is tested
    assert token not in res.output and "AbCdEfGh" not in res.output


def test_a_run_too_big_for_memory_inside_a_tar_is_refused(tmp_path: Path, monkeypatch) -> None:
    import io as _io
    import tarfile as _tarfile

    import forensics.ingest as ingest_mod
    from forensics.errors import InputError

    out = tmp_path / "big-run.tar"
    with _tarfile.open(out, "w") as tf:
        for i in range(3):
            data = b"INFO 01-01 00:00:00 [x.py:1] line\n" * 2000
            info = _tarfile.TarInfo(f"camp/run1/part{i}.log")
            info.size = len(data)
            tf.addfile(info, _io.BytesIO(data))
    monkeypatch.setattr(ingest_mod, "MAX_RUN_BYTES", 100_000)
    with pytest.raises(InputError, match="run run1 holds more than"):
        ingest_mod.ingest_paths(tmp_path / "a.duckdb", [out])


def test_closing_a_log_closes_its_file_compressed_or_refused(tmp_path: Path) -> None:
    """No file handle outlives a scan: gzip's reader leaves the file it was given open."""
    import gc
    import gzip
    import warnings

    from forensics.errors import InputError
    from forensics.parsing.reader import open_log

    gz = tmp_path / "x.log.gz"
    gz.write_bytes(gzip.compress(b"INFO 01-01 00:00:00 [a.py:1] hello\n"))
    elf = tmp_path / "a.out"
    elf.write_bytes(b"\x7fELF" + bytes(64))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        stream, _ = open_log(gz)
        assert stream.read().endswith(b"hello\n")
        stream.close()
        with pytest.raises(InputError):
            open_log(elf)
        del stream
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
