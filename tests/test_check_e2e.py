"""`forensics check` on real-format run folders: exactly the expected rules per run, none on clean runs.

Each run folder holds a real corpus log (fixtures/corpus) and, where a rule compares against the
request, a launch command; the fp8 run is assembled from real line shapes of the formats
catalogue (`parsers/vllm/fp8.toml` samples, the V0 preemption warning) plus a failed probe.
"""
from __future__ import annotations

import collections
import json
import shutil
from pathlib import Path

from forensics.cli import cli

from .conftest import CORPUS

RUNS = {
    "clean-vllm": ("vllm/07_v1-engine000-metrics-kv-usage-climb.log", "vllm serve m --max-num-seqs 256\n", set()),
    "clean-sglang": ("sglang/07_l40s-llama-startup-kv-pool.log", None, set()),
    "startup-negative-kv": ("vllm/02_gptoss120b-negative-kv-memory.log", None,
                            {"kv.no_memory:error", "startup.failed:error", "backend.fallback:warning"}),
    "crash-oom": ("vllm/20_2026-runtime-cuda-oom-asyncllm-output-handler.log", None, {"engine.died_after_ready:error"}),
    "dead-serving": ("sglang/04_dp-scheduler-crash-health-generate-still-200.log", None,
                     {"engine.dead_but_serving:critical", "engine.died_after_ready:error"}),
    "cap-mamba": ("sglang/01_ktransformers-qwen35-397b-mamba-tp2.log",
                  "python -m sglang.launch_server --model-path /m --tp-size 2 --max-running-requests 4\n",
                  {"limits.running_below_requested:warning"}),
}

FP8_LOG = (
    "INFO 06-16 21:05:01 llm_engine.py:161] Initializing an LLM engine (v0.6.4) with config: model='/m', "
    "kv_cache_dtype=fp8, max_seq_len=4096, tensor_parallel_size=1)\n"
    "INFO 06-16 21:05:09 kv_cache.py:80] Using KV cache scaling factor 1.0 for fp8_e4m3. This may cause accuracy "
    "issues. Please make sure k/v_scale scaling factors are available in the fp8 checkpoint.\n"
    "WARNING 06-16 21:09:12 scheduler.py:1560] Sequence group 42 is preempted by PreemptionMode.RECOMPUTE mode "
    "because there is not enough KV cache space. This can affect the end-to-end performance. Increase "
    "gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=1\n"
)


def test_check_fires_exactly_the_expected_rules(runner, tmp_path: Path) -> None:
    camp = tmp_path / "campaign"
    expected = {}
    for run, (log, cmd, rules) in RUNS.items():
        d = camp / run
        d.mkdir(parents=True)
        shutil.copy(CORPUS / log, d / "server.log")
        if cmd:
            (d / "cmd.sh").write_text(cmd)
        expected[run] = rules
    fp8 = camp / "fp8-preempt"
    fp8.mkdir()
    (fp8 / "server.log").write_text(FP8_LOG)
    (fp8 / "probes.jsonl").write_text(
        '{"name": "gsm8k", "score": 0.12, "ok": false}\n'
        '{"name": "json_mode", "ok": true, "expect": "json", "response": "```json\\n{\\"a\\": 1}\\n```"}\n')
    expected["fp8-preempt"] = {"precision.fp8_uncalibrated:error", "runtime.preemption:warning",
                               "quality.json_not_strict:error"}

    late = camp / "compile-after-ready"
    late.mkdir()
    (late / "server.log").write_text(
        (CORPUS / "vllm" / "07_v1-engine000-metrics-kv-usage-climb.log").read_text()
        + "(EngineCore_DP0 pid=441) INFO 07-28 06:43:15 [backends.py:286] Compiling a graph for dynamic shape "
          "takes 13.62 s\n")
    expected["compile-after-ready"] = {"bench.compile_during_sweep:warning"}

    res = runner.invoke(cli, ["check", str(camp), "--format", "json", "--fail-on", "critical"])
    doc = json.loads(res.output)
    fired = collections.defaultdict(set)
    for f in doc["findings"]:
        fired[f["run"]].add(f"{f['rule']}:{f['severity']}")
        assert f["evidence"] and all(e["file"] for e in f["evidence"]), f
    assert sorted(doc["runs"]) == sorted(expected)
    assert {r: fired.get(r, set()) for r in expected} == expected
    assert res.exit_code == 1  # the critical dead-but-serving finding reaches --fail-on critical
