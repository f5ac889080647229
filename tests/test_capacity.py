"""`forensics capacity`: real corpus logs in run folders with a launch command, exact numbers."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from forensics.archive import open_archive
from forensics.capacity import capacity, parse_length, parse_lengths
from forensics.cli import cli
from forensics.errors import ForensicsError
from forensics.ingest import ingest_paths

from .conftest import CORPUS


def _run(root: Path, name: str, log: str, cmd: str | None = None, bench: dict | None = None) -> Path:
    d = root / name
    d.mkdir(parents=True)
    shutil.copy(CORPUS / log, d / "server.log")
    if cmd is not None:
        (d / "cmd.sh").write_text(cmd, encoding="utf-8")
    if bench is not None:
        (d / "bench.json").write_text(json.dumps(bench), encoding="utf-8")
    return d


VLLM_CMD = "#!/bin/bash\nvllm serve Qwen/Qwen3-0.6B \\\n  --max-num-seqs 512 \\\n  --max-model-len 32768 \\\n  --data-parallel-size 2\n"
SGLANG_CMD = ("python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --dp 2 "
              "--max-running-requests 128 --context-length 65536\n")
BENCH = {"date": "20250530-194738", "backend": "vllm", "model_id": "Qwen/Qwen3-0.6B", "num_prompts": 100,
         "completed": 100, "total_input_tokens": 300000, "total_output_tokens": 50000, "duration": 20.0,
         "random_input_len": 3000, "random_output_len": 500, "mean_ttft_ms": 50.0}


@pytest.fixture
def campaign(tmp_path: Path) -> Path:
    root = tmp_path / "camp"
    _run(root, "vllm04__dp2", "vllm/04_v1-small-model-kv-tokens-progressbars.log", VLLM_CMD, BENCH)
    _run(root, "vllm05", "vllm/05_2026-gguf-qwen35-blocks-override.log")
    _run(root, "vllm34", "vllm/34_2026-hybrid-kv-tokens-vs-concurrency-startup-complete.log",
         "vllm serve Qwen/Qwen3.5-35B-A3B --max-num-seqs 8\n")
    _run(root, "sglang01", "sglang/01_ktransformers-qwen35-397b-mamba-tp2.log")
    _run(root, "sglang07__dp2", "sglang/07_l40s-llama-startup-kv-pool.log", SGLANG_CMD)
    return root


def _rows(res) -> dict[str, tuple]:
    return {r["length"]: (r["fits"], r["binding"], r["kv_fit"]) for r in res.rows}


def test_capacity_numbers_and_binding_limit(campaign: Path, tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    report = ingest_paths(db, [campaign])
    assert not report.failed
    con = open_archive(db, read_only=True)
    try:
        lengths = parse_lengths(None)
        v = capacity(con, "vllm04__dp2", lengths)
        # GPU KV cache size: 1,587,648 tokens per engine, 2 engines, --max-num-seqs 512, --max-model-len 32768
        assert (v.kv_tokens.value, v.engines.value, v.seq_cap.value, v.context.value) == (1587648, 2, 512, 32768)
        assert (v.kv_tokens.file, v.kv_tokens.line) == ("vllm04__dp2/server.log", 8)
        assert v.seq_cap.section == "requested" and v.seq_cap.line == 3
        rows = _rows(v)
        assert rows["1K+1K"] == (1024, "seq cap", 775 * 2)      # cap 512 per engine x 2; floor(1587648 / 2048) = 775 x 2
        assert rows["8K+1K"] == (344, "kv", 344)                 # floor(1587648 / 9216) = 172, x2
        assert rows["32K"] == (96, "kv", 96)                     # floor(1587648 / 32768) = 48, x2
        for big in ("128K", "256K", "512K", "1M"):
            assert rows[big] == (None, "context", None)
        assert rows["3000+500"] == (906, "kv", 906)              # the benchmark's random lengths: 453 x 2 < 1024
        assert v.rows[-1]["source"] == "bench (random)"

        s = capacity(con, "sglang07__dp2", lengths)
        # KV Cache is allocated. #tokens: 183133 (per DP worker), --dp 2, --max-running-requests 128
        assert (s.kv_tokens.value, s.engines.value, s.seq_cap.value, s.context.value) == (183133, 2, 128, 65536)
        assert s.engines.name == "dp_size"
        rows = _rows(s)
        assert rows["1K+1K"] == (178, "kv", 178)               # cap 128 x 2 = 256 > 89 x 2
        assert rows["8K+1K"] == (38, "kv", 38)
        assert rows["32K"] == (10, "kv", 10)
        assert rows["128K"][1] == "context"

        g = capacity(con, "sglang01", lengths)
        # max_total_num_tokens=580364, max_running_requests=1, context_len=8192 (all effective, one line)
        assert (g.kv_tokens.value, g.seq_cap.value, g.context.value, g.engines.value) == (580364, 1, 8192, None)
        assert g.seq_cap.section == "effective" and g.context.section == "effective"
        rows = _rows(g)
        assert rows["1K+1K"] == (1, "seq cap", 283)
        assert rows["8K+1K"][1] == "context"

        h = capacity(con, "vllm34", lengths)
        # effective context_len 262144 (Using max model len), GPU KV cache size 37,392 tokens, --max-num-seqs 8
        assert (h.kv_tokens.value, h.seq_cap.value, h.context.value) == (37392, 8, 262144)
        rows = _rows(h)
        assert rows["1K+1K"] == (8, "seq cap", 18)
        assert rows["8K+1K"] == (4, "kv", 4)
        assert rows["256K"] == (0, "kv", 0)
        assert rows["512K"][1] == "context"

        n = capacity(con, "vllm05", lengths)
        assert n.seq_cap.value is None and n.context.value is None
        rows = _rows(n)
        assert rows["1K+1K"] == (43, "kv (seq cap unknown)", 43)  # floor(89760 / 2048)
        assert rows["1M"] == (0, "kv (seq cap unknown)", 0)

        with pytest.raises(ForensicsError, match="no run"):
            capacity(con, "nope", lengths)
    finally:
        con.close()


def test_parse_lengths() -> None:
    assert [(x.prompt, x.output) for x in parse_lengths("1K+1K, 8k+1k,32K,1M,3000+500")] == [
        (1024, 1024), (8192, 1024), (32768, 0), (1048576, 0), (3000, 500)]
    assert parse_length("8k+1k").label == "8K+1K"
    for bad in ("", "x", "1K+", "-1K", "0"):
        with pytest.raises(ForensicsError):
            parse_length(bad)


def test_capacity_cli_folder_and_run_id(runner, campaign: Path, tmp_path: Path) -> None:
    out = runner.invoke(cli, ["capacity", str(campaign / "sglang07__dp2"), "--format", "json", "--lengths", "1K+1K,128K"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert doc["schema"] == "forensics.capacity/1"
    [run] = doc["runs"]
    assert run["run_id"] == "sglang07__dp2"
    assert [(r["length"], r["fits"], r["binding"]) for r in run["rows"]] == [
        ("1K+1K", 178, "kv"), ("128K", None, "context")]
    db = tmp_path / "b.duckdb"
    assert runner.invoke(cli, ["ingest", str(campaign), "--archive", str(db)]).exit_code == 0
    out = runner.invoke(cli, ["capacity", "vllm04__dp2", "--archive", str(db), "--lengths", "8K+1K,128K"])
    assert out.exit_code == 0, out.output
    line = next(ln for ln in out.output.splitlines() if ln.startswith("8K+1K"))
    assert line.split()[1:4] == ["9216", "344", "kv"]
    line = next(ln for ln in out.output.splitlines() if ln.startswith("128K"))
    assert " - " in line and "> context 32768" in line
    md = runner.invoke(cli, ["capacity", "vllm04__dp2", "--archive", str(db), "--format", "md"])
    assert md.exit_code == 0 and md.output.startswith("## vllm04__dp2 (vllm)")
    bad = runner.invoke(cli, ["capacity", "no_such_run", "--archive", str(db)])
    assert bad.exit_code == 2 and "no run `no_such_run`" in bad.output
    bad = runner.invoke(cli, ["capacity", "vllm04__dp2", "--archive", str(db), "--lengths", "lots"])
    assert bad.exit_code == 2 and "bad length" in bad.output
