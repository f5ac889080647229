"""SIGKILL real `forensics ingest` processes at random points: the archive must always open and
hold exactly the runs that were committed, each with all of its rows.

The campaign (20 runs) is built from the repository fixtures at test time. The reference is an
uninterrupted in-process ingest of the same campaign: runs are independent, so the rows of a run
there are the rows a fresh ingest of that run alone gives. Delays are drawn from a seeded RNG
(the seed is in the failure message) so a failing interleaving can be replayed.
"""
from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from forensics.archive import open_archive
from forensics.ingest import RUN_TABLES, ingest_paths

from .conftest import CORPUS, FIXTURES

RESULTS = FIXTURES / "results"
EXE = str(Path(sys.executable).with_name("forensics"))
KILLS = 8
N_RUNS = 20

LOGS = sorted(CORPUS.glob("*/*.log"))
EXTRAS = [
    ("bench.json", RESULTS / "vllm_benchmark_serving_results_multi_run_concatenated.json"),
    ("results.jsonl", RESULTS / "sglang_bench_serving_llama_3_3_70b_online_output.jsonl"),
    ("gpu.csv", RESULTS / "nvidia-smi_query-gpu_csv_with_units_bpytop_issue26.csv"),
    ("profile_export_aiperf.json", RESULTS / "aiperf_profile_export_aiperf_synthetic.json"),
    ("llmperf_individual_responses.json", RESULTS / "llmperf_individual_responses_lepton_7b_with_429_errors.json"),
]


def make_campaign(root: Path, name: str = "camp", runs: int = N_RUNS, salt: str = "") -> Path:
    """`runs` run folders from real fixtures: a log, a launch command, two result/telemetry files."""
    camp = root / name
    for i in range(runs):
        engine = "vllm" if i % 2 == 0 else "sglang"
        d = camp / f"m{i % 5}__tp{1 + i % 4}__{engine}__{i:04d}{salt}"
        d.mkdir(parents=True)
        shutil.copy(LOGS[i % len(LOGS)], d / "server.log")
        if engine == "vllm":
            cmd = f"vllm serve /models/m{i} --max-num-seqs {32 + i} --max-model-len 8192\n"
        else:
            cmd = f"python3 -m sglang.launch_server --model-path /models/m{i} --max-running-requests {16 + i}\n"
        (d / "cmd.sh").write_text("#!/bin/bash\n" + cmd)
        for k in (i % len(EXTRAS), (i + 2) % len(EXTRAS)):
            shutil.copy(EXTRAS[k][1], d / EXTRAS[k][0])
    return camp


def snapshot(db: Path) -> dict[str, tuple]:
    """Per run: its content hash and the row count of every run table (opened as ingest would)."""
    con = open_archive(db)  # read-write, so a WAL left by a killed writer is replayed as it would be
    try:
        runs = dict(con.execute("SELECT run_id, content_hash FROM runs").fetchall())
        counts: dict[str, dict[str, int]] = {r: {} for r in runs}
        orphans = {}
        for t in RUN_TABLES:
            for run_id, n in con.execute(f"SELECT run_id, count(*) FROM {t} GROUP BY run_id").fetchall():
                if run_id in counts:
                    counts[run_id][t] = n
                else:
                    orphans[(t, run_id)] = n
        assert not orphans, f"rows of uncommitted runs: {orphans}"
        return {r: (h, tuple(sorted(counts[r].items()))) for r, h in runs.items()}
    finally:
        con.close()


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> tuple[Path, dict[str, tuple]]:
    root = tmp_path_factory.mktemp("kill")
    camp = make_campaign(root)
    ref_db = root / "reference.duckdb"
    rep = ingest_paths(ref_db, [camp])
    assert len(rep.added) == N_RUNS and not rep.failed
    ref = snapshot(ref_db)
    assert all(dict(c).get("files") for _, c in ref.values())
    return camp, ref


def _start(camp: Path, db: Path) -> subprocess.Popen:
    return subprocess.Popen([EXE, "ingest", str(camp), "--archive", str(db)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)


def test_sigkill_at_random_points_loses_nothing_committed(campaign, tmp_path: Path) -> None:
    camp, ref = campaign
    seed = int(os.environ.get("FORENSICS_KILL_SEED", time.time_ns() % 10**6))
    rng = random.Random(seed)
    db = tmp_path / "a.duckdb"
    seen: list[int] = []
    boot = None  # seconds from exec to the archive's creation: imports and pattern loading
    for k in range(KILLS):
        if k % 3 == 2 and db.exists():  # now and then start over, so early kills hit an empty archive too
            db.unlink()
            Path(str(db) + ".wal").unlink(missing_ok=True)
        proc = _start(camp, db)
        t0 = time.monotonic()
        if boot is None:
            while not db.exists() and proc.poll() is None and time.monotonic() - t0 < 60:
                time.sleep(0.01)
            boot = time.monotonic() - t0
        # a delay measured from the end of start-up, so most kills land while runs are written
        delay = boot + rng.uniform(0.05, 1.5) - (time.monotonic() - t0)
        time.sleep(max(0.0, delay))
        delay = time.monotonic() - t0
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)  # reaps it and closes the stderr pipe
        if not db.exists():
            seen.append(0)
            continue
        got = snapshot(db)
        seen.append(len(got))
        for run_id, value in got.items():
            assert value == ref[run_id], f"seed {seed}, kill {k} after {delay:.2f} s: run {run_id} is partial"
    print(f"seed {seed}: start-up {boot:.2f} s, runs committed at each kill {seen}")
    # the interrupted archive completes to exactly the reference
    proc = _start(camp, db)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert snapshot(db) == ref, f"seed {seed}: runs committed per kill {seen}"


def test_a_killed_writer_does_not_cost_a_concurrent_one_anything(campaign, tmp_path: Path) -> None:
    camp, ref = campaign
    other = make_campaign(tmp_path, "other", runs=6, salt="-b")
    db = tmp_path / "a.duckdb"
    victim = _start(camp, db)
    survivor = _start(other, db)
    time.sleep(random.uniform(0.5, 1.5))
    victim.send_signal(signal.SIGKILL)
    victim.communicate(timeout=30)
    _, err = survivor.communicate(timeout=300)
    assert survivor.returncode == 0, err
    got = snapshot(db)
    assert {r for r in got if r.endswith("-b")} == {d.name for d in other.iterdir()}
    for run_id, value in got.items():
        if run_id in ref:
            assert value == ref[run_id]


def test_killed_mid_write_leaves_no_lock_behind(campaign, tmp_path: Path) -> None:
    """After a SIGKILL the next ingest gets the archive at once (no stale lock file to clear)."""
    camp, _ = campaign
    db = tmp_path / "a.duckdb"
    proc = _start(camp, db)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # wait until at least one run is committed, then kill
        if db.exists():
            try:
                con = duckdb.connect(str(db), read_only=True)
            except duckdb.Error:
                time.sleep(0.05)
                continue
            n = con.execute("SELECT count(*) FROM runs").fetchone()[0]
            con.close()
            if n:
                break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    t0 = time.monotonic()
    con = open_archive(db, wait_s=5)
    con.close()
    assert time.monotonic() - t0 < 5
