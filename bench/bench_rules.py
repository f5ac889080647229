#!/usr/bin/env python3
"""Benchmark: every built-in rule on an archive with campaign-scale row counts.

Builds the archive directly in DuckDB (1,000 runs, 4,000 bench points, 10M requests, 5M GPU
samples by default; one request in 1,000 truncated, some samples throttled) so the rules can be
timed in seconds rather than after a 20-minute ingest, then prints a markdown section with the
median of 3 runs per rule on a read-only connection.

    python bench/bench_rules.py [--runs 1000] [--requests 10000000] [--gpu-samples 5000000]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def build(path: Path, runs: int, requests: int, samples: int) -> None:
    from forensics.archive import open_archive

    con = open_archive(path)
    per_run = requests // runs
    con.execute(f"""INSERT INTO runs (run_id, campaign, content_hash, engine, outcome)
        SELECT 'run' || i, 'c', 'h', 'vllm', 'ready' FROM range({runs}) t(i)""")
    con.execute(f"""INSERT INTO bench_points (run_id, source_file, point_index, max_concurrency, ts_end_utc,
            duration_s, random_input_len, random_output_len, completed, failed)
        SELECT 'run' || (i // 4), 'f' || (i % 4), 0, [1, 16, 64, 128][(i % 4) + 1], 1.79e9 + (i % 4) * 300,
               290, 1000, 256, {per_run // 4}, 0 FROM range({runs * 4}) t(i)""")
    con.execute(f"""INSERT INTO requests (run_id, source_file, line, tool, point_index, request_index,
            input_tokens, output_tokens, ttft_ms, e2e_ms, success, extra)
        SELECT 'run' || (i // {per_run}), 'f' || ((i % {per_run}) // {per_run // 4}), 1, 'vllm_bench', 0,
               i % {per_run // 4}, 1000, CASE WHEN i % 1000 = 0 THEN 3 ELSE 256 END,
               20 + (i * 7919 % 1980), 5000, true, '{{"k": "extra json"}}'
        FROM range({requests}) t(i)""")
    per_gpu = samples // runs
    con.execute(f"""INSERT INTO gpu_samples (run_id, source_file, line, source_tool, ts_utc, gpu_index,
            temperature_c, sm_clock_mhz, reason_hw_slowdown, reason_sw_thermal, reason_hw_thermal,
            reason_hw_power_brake, reason_sw_power_cap, extra)
        SELECT 'run' || (i // {per_gpu}), 'gpu.csv', i % {per_gpu}, 'nvidia-smi', 1.79e9 - 100 + (i % {per_gpu}) * 0.3,
               i % 4, 60 + i % 30, 1500, i % 997 = 0, false, false, false, i % 501 = 0, '{{"x": 1}}'
        FROM range({samples}) t(i)""")
    con.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--gpu-samples", type=int, default=5_000_000)
    args = ap.parse_args()
    import duckdb

    from forensics import rules as rules_mod

    with tempfile.TemporaryDirectory(prefix="forensics-rules-") as tmp:
        db = Path(tmp) / "rules.duckdb"
        t = time.perf_counter()
        build(db, args.runs, args.requests, args.gpu_samples)
        build_s = time.perf_counter() - t
        con = duckdb.connect(str(db), read_only=True)
        rows = []
        for rule in rules_mod.load_rules():
            times = []
            for _ in range(3):
                t = time.perf_counter()
                n = len(con.execute(rule.sql).fetchall())
                times.append(time.perf_counter() - t)
            rows.append((rule.id, sorted(times)[1], n))
        con.close()
    load = os.getloadavg()[0]
    print("## Rules at campaign scale\n")
    print(f"`bench/bench_rules.py`: an archive built in DuckDB with {args.runs:,} runs, {args.requests:,} request rows "
          f"and {args.gpu_samples:,} GPU samples (built in {build_s:.1f} s); each built-in rule run 3 times on a "
          f"read-only connection, median shown. Target: every rule under 1 s. {os.cpu_count()} cores, "
          f"1-minute load average {load:.1f} at the end.\n")
    print("| rule | median | findings | under 1 s |\n|---|---:|---:|---|")
    for rid, s, n in rows:
        print(f"| `{rid}` | {s * 1000:,.0f} ms | {n:,} | {'yes' if s < 1 else 'NO'} |")


if __name__ == "__main__":
    main()
