"""`forensics diff`: two launches of real-format runs compared."""
from __future__ import annotations

from pathlib import Path

from forensics.cli import cli

from .regen_reports import make_run


def test_diff_capacity_sweep_against_negative_kv(tmp_path: Path, runner) -> None:
    a = make_run(tmp_path, "capacity-limited-sweep")
    b = make_run(tmp_path, "vllm-negative-kv")
    res = runner.invoke(cli, ["diff", str(a), str(b)])
    assert res.exit_code == 0, res.output
    out = res.output
    assert out.startswith("# Diff: capacity-limited-sweep -> vllm-negative-kv")
    assert "| **outcome** | **unknown** | **failed_startup** |" in out
    assert "| **max_running_requests** | **256** |  | **only A** |" in out  # requested
    assert "| **kv_cache_tokens** | **580364 tokens** |  | **only A** |" in out  # capacity
    assert "| **state_slots** | **82 slots** |  | **only A** |" in out
    assert "| **kv.no_memory** | **new in B** |" in out
    assert "| **load.concurrency_over_slots** | **gone in B** |" in out
    assert "concurrency 4 only in A" in out


def test_diff_matches_benchmark_points(tmp_path: Path, runner) -> None:
    a = make_run(tmp_path / "a", "sglang-dead-but-serving")
    b = make_run(tmp_path / "b", "sglang-dead-but-serving")
    b = b.rename(b.parent / "sglang-rerun")
    db = tmp_path / "x.duckdb"
    assert runner.invoke(cli, ["ingest", str(a), str(b), "--archive", str(db)]).exit_code == 0
    res = runner.invoke(cli, ["diff", "sglang-dead-but-serving", "sglang-rerun", "--archive", str(db)])
    assert res.exit_code == 0, res.output
    assert "| rate 16 | output tok/s | 4288 | 4288 | +0.0% |" in res.output
    assert "| engine.dead_but_serving | both |" in res.output


def test_diff_same_run_is_an_error(tmp_path: Path, runner) -> None:
    a = make_run(tmp_path, "vllm-negative-kv")
    res = runner.invoke(cli, ["diff", str(a), str(a)])
    assert res.exit_code == 2 and "Error: both runs are `vllm-negative-kv`" in res.output
