"""Ingest real-format run folders into a real DuckDB archive and query it back."""
from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import duckdb
import pytest

from forensics.cli import cli
from forensics.ingest import ingest_paths

from .conftest import CORPUS, FIXTURES

RESULTS = FIXTURES / "results"
VLLM_LOG = CORPUS / "vllm" / "07_v1-engine000-metrics-kv-usage-climb.log"
SGLANG_LOG = CORPUS / "sglang" / "04_dp-scheduler-crash-health-generate-still-200.log"


def make_campaign(root: Path) -> Path:
    """Two run folders from real files: a vLLM run with results and telemetry, an SGLang crash."""
    camp = root / "campaign-a"
    a = camp / "llama__tp1__vllm__0001"
    a.mkdir(parents=True)
    shutil.copy(VLLM_LOG, a / "server.log")
    (a / "cmd.sh").write_text("#!/bin/bash\nvllm serve meta-llama/Llama-3.1-8B \\\n  --max-num-seqs 256 \\\n  --max-model-len 8192\n")
    shutil.copy(RESULTS / "vllm_benchmark_serving_results_multi_run_concatenated.json", a / "bench.json")
    shutil.copy(RESULTS / "nvidia-smi_query-gpu_csv_with_units_bpytop_issue26.csv", a / "gpu.csv")
    (a / "probes.jsonl").write_text('{"name": "gsm8k", "score": 0.41, "ok": false}\n{"name": "mmlu", "ok": true}\n')
    b = camp / "dsr1__dp8__sglang__0002"
    b.mkdir(parents=True)
    shutil.copy(SGLANG_LOG, b / "server.log")
    shutil.copy(RESULTS / "sglang_bench_serving_llama_3_3_70b_online_output.jsonl", b / "results.jsonl")
    return camp


def q(db: Path, sql: str):
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_ingest_loads_every_recognised_file(tmp_path: Path) -> None:
    camp = make_campaign(tmp_path)
    db = tmp_path / "a.duckdb"
    rep = ingest_paths(db, [camp])
    assert sorted(rep.added) == ["dsr1__dp8__sglang__0002", "llama__tp1__vllm__0001"]
    runs = dict(q(db, "SELECT run_id, outcome FROM runs"))
    assert runs == {"llama__tp1__vllm__0001": "ready", "dsr1__dp8__sglang__0002": "crashed_after_ready"}
    kinds = dict(q(db, "SELECT path, kind FROM files WHERE run_id = 'llama__tp1__vllm__0001'"))
    assert kinds["llama__tp1__vllm__0001/server.log"] == "log"
    assert kinds["llama__tp1__vllm__0001/cmd.sh"] == "command"
    assert kinds["llama__tp1__vllm__0001/bench.json"] == "result"
    assert kinds["llama__tp1__vllm__0001/gpu.csv"] == "result"
    # requested from cmd.sh, with its line; effective from the log
    req = q(db, "SELECT value_num, file, line FROM facts WHERE section='requested' AND name='max_num_seqs'")
    assert req == [(256.0, "llama__tp1__vllm__0001/cmd.sh", 3)]
    assert q(db, "SELECT value_num FROM facts WHERE name='peak_kv_usage_pct'") == [(95.8,)]
    # the runtime series: one row per stats line in the log
    n_stats = sum(1 for line in VLLM_LOG.read_text().splitlines() if "Avg prompt throughput" in line)
    assert q(db, "SELECT count(*) FROM runtime WHERE run_id='llama__tp1__vllm__0001'") == [(n_stats,)]
    assert q(db, "SELECT count(*) FROM probes WHERE run_id='llama__tp1__vllm__0001' AND ok = false") == [(1,)]
    assert q(db, "SELECT count(*) > 0 FROM bench_points WHERE run_id='llama__tp1__vllm__0001'") == [(True,)]
    assert q(db, "SELECT count(*) > 0 FROM gpu_samples WHERE run_id='llama__tp1__vllm__0001'") == [(True,)]
    # the SGLang crash keeps its root cause with rank, and its HTTP 200s after death
    assert q(db, "SELECT type, rank FROM errors WHERE run_id='dsr1__dp8__sglang__0002' AND ordinal=0") == \
        [("Scheduler hit an exception", "DP1 TP2")]
    assert q(db, "SELECT ok_count > 0 FROM http_after_fatal WHERE run_id='dsr1__dp8__sglang__0002'") == [(True,)]


def test_reingest_is_a_no_op_and_a_change_replaces(tmp_path: Path) -> None:
    camp = make_campaign(tmp_path)
    db = tmp_path / "a.duckdb"
    ingest_paths(db, [camp])
    before = q(db, "SELECT (SELECT count(*) FROM facts), (SELECT count(*) FROM requests), (SELECT count(*) FROM runtime)")
    rep = ingest_paths(db, [camp])
    assert rep.added == [] and len(rep.unchanged) == 2
    assert q(db, "SELECT (SELECT count(*) FROM facts), (SELECT count(*) FROM requests), (SELECT count(*) FROM runtime)") == before
    (camp / "llama__tp1__vllm__0001" / "cmd.sh").write_text("vllm serve m --max-num-seqs 32\n")
    rep = ingest_paths(db, [camp])
    assert rep.replaced == ["llama__tp1__vllm__0001"]
    assert q(db, "SELECT value_num FROM facts WHERE section='requested' AND name='max_num_seqs'") == [(32.0,)]


def test_failure_half_way_leaves_the_archive_as_it_was(tmp_path: Path, monkeypatch) -> None:
    camp = make_campaign(tmp_path)
    db = tmp_path / "a.duckdb"
    ingest_paths(db, [camp / "llama__tp1__vllm__0001"])
    snapshot = q(db, "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM facts), (SELECT count(*) FROM requests)")
    import forensics.archive as archive

    real = archive.insert_rows
    calls = {"n": 0}

    def flaky(con, table, rows, run_id=None):
        calls["n"] += 1
        if calls["n"] == 4:
            raise RuntimeError("disk full (simulated)")
        return real(con, table, rows, run_id)

    monkeypatch.setattr(archive, "insert_rows", flaky)
    with pytest.raises(RuntimeError):
        ingest_paths(db, [camp / "dsr1__dp8__sglang__0002"])
    assert q(db, "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM facts), (SELECT count(*) FROM requests)") == snapshot


def _tar(camp: Path, out: Path, mode: str) -> None:
    with tarfile.open(out, mode) as tf:
        tf.add(camp, arcname=camp.name)


@pytest.mark.parametrize("suffix", [".tar", ".tar.gz", ".tar.zst"])
def test_tar_archives_read_like_folders(tmp_path: Path, suffix: str) -> None:
    camp = make_campaign(tmp_path)
    out = tmp_path / f"campaign-a{suffix}"
    if suffix == ".tar.zst":
        import zstandard

        raw = tmp_path / "plain.tar"
        _tar(camp, raw, "w")
        out.write_bytes(zstandard.ZstdCompressor().compress(raw.read_bytes()))
    else:
        _tar(camp, out, "w:gz" if suffix == ".tar.gz" else "w")
    db_dir, db_tar = tmp_path / "dir.duckdb", tmp_path / "tar.duckdb"
    ingest_paths(db_dir, [camp])
    ingest_paths(db_tar, [out])
    sql = "SELECT run_id, section, name, value_json FROM facts ORDER BY ALL"
    assert q(db_tar, sql) == q(db_dir, sql)
    assert q(db_tar, "SELECT count(*) FROM requests") == q(db_dir, "SELECT count(*) FROM requests")


def test_hostile_tar_members_are_skipped(tmp_path: Path) -> None:
    out = tmp_path / "evil.tar"
    with tarfile.open(out, "w") as tf:
        for name, data in (("../escape/server.log", b"x"), ("/abs/server.log", b"y")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("run1/server.log")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tf.addfile(link)
        ok = VLLM_LOG.read_bytes()
        info = tarfile.TarInfo("run2/server.log")
        info.size = len(ok)
        tf.addfile(info, io.BytesIO(ok))
    db = tmp_path / "a.duckdb"
    rep = ingest_paths(db, [out])
    assert rep.added == ["run2"]
    assert not (tmp_path / "escape").exists()


def test_two_concurrent_ingests_lose_nothing(tmp_path: Path) -> None:
    camp = make_campaign(tmp_path)
    other = tmp_path / "campaign-b"
    shutil.copytree(camp, other)
    for d in other.iterdir():
        d.rename(other / (d.name + "-b"))
    db = tmp_path / "a.duckdb"
    exe = str(Path(sys.executable).with_name("forensics"))
    procs = [subprocess.Popen([exe, "ingest", str(p), "--archive", str(db)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for p in (camp, other)]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert q(db, "SELECT count(*) FROM runs") == [(4,)]


def test_sql_is_read_only_and_formats(runner, tmp_path: Path) -> None:
    camp = make_campaign(tmp_path)
    db = tmp_path / "a.duckdb"
    ingest_paths(db, [camp])
    for bad in ("DROP TABLE runs", "DELETE FROM runs", "COPY runs TO 'x.csv'", "ATTACH 'x.duckdb'",
                "SELECT 1; DROP TABLE runs"):
        res = runner.invoke(cli, ["sql", bad, "--archive", str(db)])
        assert res.exit_code == 2 and res.output.startswith("Error: refused"), (bad, res.output)
    res = runner.invoke(cli, ["sql", "SELECT run_id, outcome FROM runs ORDER BY 1", "--archive", str(db), "--format", "json"])
    assert res.exit_code == 0
    assert json.loads(res.output)[1] == {"run_id": "llama__tp1__vllm__0001", "outcome": "ready"}
    res = runner.invoke(cli, ["sql", "SELECT * FROM runs", "--archive", str(db), "--format", "parquet",
                              "--out", str(tmp_path / "runs.parquet")])
    assert res.exit_code == 0 and (tmp_path / "runs.parquet").exists()
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "runs.parquet").num_rows == 2
    res = runner.invoke(cli, ["runs", "--archive", str(db)])
    assert "crashed_after_ready" in res.output and "llama__tp1__vllm__0001" in res.output
    assert q(db, "SELECT count(*) FROM runs") == [(2,)]


def test_export_writes_hive_partitions_another_engine_reads(runner, tmp_path: Path) -> None:
    camp = make_campaign(tmp_path)
    db = tmp_path / "a.duckdb"
    ingest_paths(db, [camp])
    out = tmp_path / "export"
    res = runner.invoke(cli, ["export", str(out), "--archive", str(db)])
    assert res.exit_code == 0, res.output
    assert (out / "runs" / "campaign=campaign-a").is_dir()
    con = duckdb.connect()
    rows = con.execute(f"SELECT campaign, count(*) FROM read_parquet('{out}/facts/*/*.parquet', hive_partitioning=true) "
                       "GROUP BY 1").fetchall()
    assert rows == q(db, "SELECT 'campaign-a', count(*) FROM facts")


def test_missing_path_and_missing_archive_are_one_line_errors(runner, tmp_path: Path) -> None:
    res = runner.invoke(cli, ["sql", "SELECT 1", "--archive", str(tmp_path / "none.duckdb")])
    assert res.exit_code == 2 and res.output.startswith("Error: no archive at")
    res = runner.invoke(cli, ["schema"])
    assert "CREATE TABLE IF NOT EXISTS runs" in res.output


def test_log_times_go_on_one_clock_only_where_honest(tmp_path: Path) -> None:
    camp = make_campaign(tmp_path)
    db = tmp_path / "a.duckdb"
    ingest_paths(db, [camp])
    # SGLang prints a full date: read as UTC
    (ts, raw), = q(db, "SELECT ts_utc, time_raw FROM errors WHERE run_id='dsr1__dp8__sglang__0002' AND ordinal=0")
    assert raw == "2025-05-26 07:48:17" and ts == 1748245697.0
    note = q(db, "SELECT time_note FROM runs WHERE run_id='dsr1__dp8__sglang__0002'")[0][0]
    assert "full date, read as UTC" in note
    # vLLM prints no year; the year comes from this run's benchmark results, and the note says so
    rows = q(db, "SELECT time_raw, ts_utc FROM runtime WHERE run_id='llama__tp1__vllm__0001' ORDER BY line LIMIT 1")
    year = q(db, "SELECT year(to_timestamp(min(ts_end_utc))) FROM bench_points WHERE run_id='llama__tp1__vllm__0001'")[0][0]
    import calendar
    mo, rest = rows[0][0].split("-", 1)
    d, hms = rest.split(" ")
    h, mi, sec = (int(x) for x in hms.split(":"))
    assert rows[0][1] == calendar.timegm((year, int(mo), int(d), h, mi, sec))
    note = q(db, "SELECT time_note FROM runs WHERE run_id='llama__tp1__vllm__0001'")[0][0]
    assert f"given the year {year}" in note


def test_sampler_parquet_lands_in_gpu_samples_and_feeds_gpu_throttled(runner, tmp_path: Path) -> None:
    run = tmp_path / "camp" / "run-gpu"
    run.mkdir(parents=True)
    shutil.copy(VLLM_LOG, run / "server.log")
    fleet = FIXTURES / "nvml" / "l4rz-3-sw-power-cap-a100.toml"
    res = runner.invoke(cli, ["sample", "--fake-fleet", str(fleet), "--interval", "100ms",
                              "--out", str(run / "gpu.parquet"), "--", "sleep", "0.5"])
    assert res.exit_code == 0, res.output
    db = tmp_path / "a.duckdb"
    ingest_paths(db, [run.parent])
    assert q(db, "SELECT kind FROM files WHERE path LIKE '%gpu.parquet'") == [("parquet",)]
    n, throttled = q(db, "SELECT count(*), count(*) FILTER (WHERE reason_sw_power_cap) FROM gpu_samples")[0]
    assert n > 0 and throttled > 0
    out = runner.invoke(cli, ["check", "--archive", str(db), "--format", "json", "--fail-on", "critical"])
    assert out.exit_code == 0, out.output
    rules = {f["rule"] for f in json.loads(out.output)["findings"]}
    assert "gpu.throttled" in rules
