"""`forensics clean-stats`: a `vllm bench serve --save-detailed` result with per-request arrays.

Point 0 has ten requests: two prefix-cache hits (1000 tokens in 5 ms and 4 ms), one truncated
response (10 of 100 tokens, no finish reason), one failed (an error text) and six clean ones.
Point 1 has three clean requests. The fixtures' own vLLM result files carry no per-request arrays,
so the file is written here in the tool's format.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from forensics.archive import open_archive
from forensics.cleanstats import clean_stats, create_views, excluded
from forensics.cli import cli
from forensics.ingest import ingest_paths
from forensics.rules import apply_settings, load_rules, run_rules

# (input, output, ttft s, latency s, error)
POINT0 = [
    (1000, 100, 0.100, 1.090, ""),
    (1000, 100, 0.120, 1.110, ""),
    (1000, 100, 0.110, 1.199, ""),
    (1000, 100, 0.130, 1.318, ""),
    (1000, 100, 0.140, 1.130, ""),
    (1000, 100, 0.005, 0.995, ""),   # cache hit: 200000 tokens/s
    (1000, 100, 0.004, 0.994, ""),   # cache hit: 250000 tokens/s
    (1000, 10, 0.150, 0.240, ""),    # truncated: 10 < 0.5 x 100
    (1000, 0, 0.0, 0.0, "TimeoutError: request timed out"),
    (1000, 100, 0.160, 1.150, ""),
]
POINT1 = [(5000, 200, 0.500, 2.490, ""), (5000, 200, 0.520, 2.510, ""), (5000, 200, 0.540, 2.530, "")]


def _point(reqs: list[tuple], rate: float, duration: float, date: str) -> dict:
    ok = [r for r in reqs if not r[4]]
    ttfts = sorted(r[2] * 1000 for r in ok)
    return {
        "date": date, "backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
        "num_prompts": len(reqs), "request_rate": rate, "max_concurrency": None, "duration": duration,
        "completed": len(ok), "failed": len(reqs) - len(ok),
        "total_input_tokens": sum(r[0] for r in ok), "total_output_tokens": sum(r[1] for r in ok),
        "request_throughput": len(ok) / duration, "output_throughput": sum(r[1] for r in ok) / duration,
        "mean_ttft_ms": sum(ttfts) / len(ttfts), "median_ttft_ms": ttfts[len(ttfts) // 2], "p99_ttft_ms": ttfts[-1],
        "mean_tpot_ms": 10.5, "median_tpot_ms": 10.0, "p99_tpot_ms": 12.0,
        "random_input_len": reqs[0][0], "random_output_len": reqs[0][1],
        "input_lens": [r[0] for r in reqs], "output_lens": [r[1] for r in reqs],
        "ttfts": [r[2] for r in reqs], "latencies": [r[3] for r in reqs],
        "itls": [[0.01] * max(r[1] - 1, 0) for r in reqs], "generated_texts": ["x" * r[1] for r in reqs],
        "errors": [r[4] for r in reqs],
    }


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    run = tmp_path / "camp" / "llama8b__clean"
    run.mkdir(parents=True)
    text = (json.dumps(_point(POINT0, 4.0, 10.0, "20250530-194738")) + "\n"
            + json.dumps(_point(POINT1, 8.0, 5.0, "20250530-195012")) + "\n")
    (run / "bench.json").write_text(text, encoding="utf-8")
    db = tmp_path / "a.duckdb"
    report = ingest_paths(db, [run])
    assert report.added == ["llama8b__clean"], report
    return db


def test_clean_stats_recomputes_without_flagged_requests(archive: Path) -> None:
    con = open_archive(archive, read_only=True)
    try:
        create_views(con)
        names, rows = clean_stats(con, ["llama8b__clean"])
        p0, p1 = (dict(zip(names, r)) for r in rows)
        assert (p0["point_index"], p0["requests"], p0["kept"]) == (0, 10, 6)
        assert (p0["excluded_cache_hit"], p0["excluded_truncated"], p0["excluded_failed"]) == (2, 1, 1)
        # kept TTFTs 100, 120, 110, 130, 140, 160 ms
        assert p0["clean_mean_ttft_ms"] == pytest.approx(760 / 6, rel=1e-12)
        assert p0["clean_median_ttft_ms"] == pytest.approx(125.0, rel=1e-12)
        assert p0["clean_p99_ttft_ms"] == pytest.approx(159.0, rel=1e-12)      # 140 + 0.95 x 20
        # kept TPOTs (e2e - ttft) / (out - 1): 10, 10, 11, 12, 10, 10 ms
        assert p0["clean_mean_tpot_ms"] == pytest.approx(10.5, rel=1e-12)
        assert p0["clean_median_tpot_ms"] == pytest.approx(10.0, rel=1e-12)
        assert p0["clean_p99_tpot_ms"] == pytest.approx(11.95, rel=1e-12)      # 11 + 0.95 x 1
        assert p0["clean_output_throughput"] == pytest.approx(600 / 10.0, rel=1e-12)
        # the originals, as the benchmark reported them (over the 9 successful requests)
        assert p0["mean_ttft_ms"] == pytest.approx(919 / 9, rel=1e-12)
        assert p0["output_throughput"] == pytest.approx(81.0, rel=1e-12)
        assert p0["request_rate"] == 4.0 and p0["duration_s"] == 10.0

        assert (p1["point_index"], p1["requests"], p1["kept"]) == (1, 3, 3)
        assert p1["clean_mean_ttft_ms"] == pytest.approx(520.0, rel=1e-12)
        assert p1["clean_mean_tpot_ms"] == pytest.approx(10.0, rel=1e-12)
        assert p1["clean_output_throughput"] == pytest.approx(600 / 5.0, rel=1e-12)

        names, rows = excluded(con, ["llama8b__clean"])
        got = [(r[names.index("point_index")], r[names.index("request_index")], r[names.index("reason")]) for r in rows]
        assert got == [(0, 5, "cache_hit"), (0, 6, "cache_hit"), (0, 7, "truncated"), (0, 8, "failed")]
        why = {r[names.index("request_index")]: r[names.index("why")] for r in rows}
        assert "200000 tokens/s" in why[5] and "output_tokens=10 of random_output_len=100" in why[7]
        assert "TimeoutError" in why[8]
    finally:
        con.close()


def test_exclusions_agree_with_the_rules(archive: Path) -> None:
    rules = {r.id: r for r in load_rules()}
    con = open_archive(archive, read_only=True)
    try:
        found = {f.rule: f for f in run_rules(con, [rules["bench.prefix_cache_hit"], rules["stream.truncated"],
                                                     rules["bench.failed_requests"]])}
        assert found["bench.prefix_cache_hit"].details["hits"] == 2
        assert found["stream.truncated"].details["truncated"] == 1
        assert found["bench.failed_requests"].details["failed"] == 1
    finally:
        con.close()


def test_settings_overrides_apply_to_the_view(archive: Path) -> None:
    con = open_archive(archive, read_only=True)
    try:
        apply_settings(con, {"prefix_cache_ceiling_tps": 1e9, "prefix_cache_cold_ratio": 1e9,
                             "truncated_fraction": 0.05})
        create_views(con)
        names, rows = clean_stats(con, ["llama8b__clean"])
        p0 = dict(zip(names, rows[0]))
        assert (p0["kept"], p0["excluded_cache_hit"], p0["excluded_truncated"], p0["excluded_failed"]) == (9, 0, 0, 1)
    finally:
        con.close()


def test_clean_stats_cli(runner, archive: Path) -> None:
    out = runner.invoke(cli, ["clean-stats", "llama8b__clean", "--archive", str(archive), "--format", "json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["schema"] == "forensics.clean-stats/1"
    assert [p["kept"] for p in doc["points"]] == [6, 3]
    out = runner.invoke(cli, ["clean-stats", "llama8b__clean", "--archive", str(archive), "--excluded", "--format", "csv"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].startswith("run_id,source_file,point_index,request_index,line,reason")
    assert [ln.split(",")[5] for ln in lines[1:]] == ["cache_hit", "cache_hit", "truncated", "failed"]
    out = runner.invoke(cli, ["clean-stats", "llama8b__clean", "--archive", str(archive)])
    assert out.exit_code == 0 and "6/10" in out.output and "2/1/1" in out.output
    out = runner.invoke(cli, ["clean-stats", "llama8b__clean", "--archive", str(archive), "--set", "truncated_fraction=0.05",
                              "--format", "md"])
    assert out.exit_code == 0 and "7/10" in out.output
