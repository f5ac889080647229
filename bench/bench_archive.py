#!/usr/bin/env python3
"""Benchmark: ingest a synthetic campaign and time rule-style queries on the archive.

Writes the campaign with shared/bench/make_campaign.py, ingests it with `forensics ingest`
(the real CLI, one process), then times a typical rule-style query and every built-in rule
(when the rules package is present) on a read-only connection. Prints a markdown section.

    python bench/bench_archive.py --runs 1000 --requests-per-run 10000 --gpu-samples-per-run 5000
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAKE = ROOT.parent / "shared" / "bench" / "make_campaign.py"

TYPICAL = """
SELECT b.run_id, b.max_concurrency, f.value_num AS cap, count(*) AS n, median(r.ttft_ms) AS ttft
FROM bench_points b
JOIN facts f ON f.run_id = b.run_id AND f.section = 'requested' AND f.name IN ('max_num_seqs', 'max_running_requests')
JOIN requests r ON r.run_id = b.run_id AND r.source_file = b.source_file AND r.point_index = b.point_index
WHERE b.max_concurrency > f.value_num
GROUP BY ALL
"""


def timed(fn, repeat: int = 3) -> float:
    best = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best.append(time.perf_counter() - t)
    return sorted(best)[len(best) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--requests-per-run", type=int, default=10000)
    ap.add_argument("--gpu-samples-per-run", type=int, default=5000)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="forensics-bench-"))
    camp = work / "campaign"
    db = work / "bench.duckdb"
    t = time.perf_counter()
    subprocess.run([sys.executable, str(MAKE), str(camp), "--runs", str(args.runs), "--requests-per-run",
                    str(args.requests_per_run), "--gpu-samples-per-run", str(args.gpu_samples_per_run)], check=True)
    gen_s = time.perf_counter() - t
    size = sum(p.stat().st_size for p in camp.rglob("*") if p.is_file())
    exe = Path(sys.executable).with_name("forensics")
    t = time.perf_counter()
    subprocess.run([str(exe), "ingest", str(camp), "--archive", str(db)], check=True)
    ingest_s = time.perf_counter() - t
    # every built-in rule through the CLI, findings stored, as CI would run it
    t = time.perf_counter()
    chk = subprocess.run([str(exe), "check", "--archive", str(db), "--format", "json", "--fail-on", "never"],
                         capture_output=True, text=True)
    check_s = time.perf_counter() - t
    if chk.returncode != 0:
        raise SystemExit(f"forensics check failed ({chk.returncode}): {chk.stderr[-2000:]}")
    import json

    n_findings = len(json.loads(chk.stdout or "[]"))

    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    counts = {tname: con.execute(f"SELECT count(*) FROM {tname}").fetchone()[0]
              for tname in ("runs", "requests", "gpu_samples", "bench_points", "runtime", "facts")}
    typical_s = timed(lambda: con.execute(TYPICAL).fetchall())
    rule_times = []
    try:
        from forensics import rules as rules_mod

        for rule in rules_mod.load_rules():
            rule_times.append((rule.id, timed(lambda rule=rule: con.execute(rule.sql).fetchall())))
    except Exception as exc:  # noqa: BLE001 - report, the ingest figures still stand
        rule_times.append((f"(rules not run: {exc})", float("nan")))
    con.close()
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"## Archive: ingest and rules on a synthetic campaign\n")
    print(f"`bench/bench_archive.py --runs {args.runs} --requests-per-run {args.requests_per_run} "
          f"--gpu-samples-per-run {args.gpu_samples_per_run}`; {os.cpu_count()} cores ({cpu}), "
          f"Python {platform.python_version()}.\n")
    print(f"| measure | value |\n|---|---:|")
    print(f"| campaign on disk | {size / 2**20:,.0f} MiB (written in {gen_s:,.1f} s) |")
    for k, v in counts.items():
        print(f"| rows in `{k}` | {v:,} |")
    print(f"| ingest wall time | {ingest_s:,.1f} s ({counts['runs'] / ingest_s:,.2f} runs/s, "
          f"{size / 2**20 / ingest_s:,.1f} MiB/s) |")
    print(f"| `forensics check` (every built-in rule, findings stored; one run) | {check_s:,.1f} s, {n_findings:,} findings |")
    print(f"| ingest + check | {ingest_s + check_s:,.1f} s |")
    print(f"| typical rule-style query (concurrency over requested cap, median TTFT per point; median of 3) | {typical_s * 1000:,.0f} ms |")
    for rid, s in rule_times:
        print(f"| rule `{rid}` (median of 3) | {s * 1000:,.0f} ms |")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
