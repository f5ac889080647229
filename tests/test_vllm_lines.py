"""Tricky vLLM line shapes, each from a real log: the facts must survive the envelope."""
from __future__ import annotations

import io

from forensics.scan import scan_stream

from .conftest import CORPUS

VLLM = CORPUS / "vllm"


def _lines(stem: str) -> list[str]:
    path = next(VLLM.glob(f"{stem}*.log"))
    return path.read_text(encoding="utf-8").split("\n")


def _scan(text: str):
    return scan_stream(io.BytesIO(text.encode("utf-8")), "test.log")


def test_tqdm_bar_glued_by_carriage_return_keeps_the_log_record() -> None:
    # 35_*: a TP worker's graph-capture bar, then the record the bar's `\r` updates sat in
    # front of (the issue paste lost the `\r`; a terminal capture keeps it).
    bar, record = _lines("35_")[0], _lines("35_")[1]
    res = _scan(bar + "\r" + record + "\n")
    assert res.effective["cuda_graph_s"].value == 1.0
    assert res.effective["cuda_graph_gib"].value == 0.1
    assert res.effective["cuda_graph_s"].rank == "Worker_TP0"
    assert res.effective["cuda_graph_s"].evidence.line == 1


def test_negative_available_kv_memory_is_read_with_its_sign() -> None:
    # 02_*: gpt-oss-120b on one GPU, the weights leave less than nothing for the KV cache
    line = "(EngineCore_0 pid=5839) INFO 08-20 18:04:22 [gpu_worker.py:276] Available KV cache memory: -2.14 GiB"
    assert line in _lines("02_")
    fact = _scan(line + "\n").effective["kv_cache_gib"]
    assert fact.value == -2.14
    assert fact.unit == "GiB"
    assert fact.rank == "EngineCore_0"


def test_markdown_quoted_compose_prefix_banner_and_ranked_workers() -> None:
    # 13_*: `> svc-1   | (APIServer pid=1) INFO ...` around the 0.18 ASCII banner
    res = _scan("\n".join(_lines("13_")[:9]) + "\n")
    assert res.meta["engine_version"].value == "0.18.0"
    assert res.meta["model"].value == "/models/unsloth/Qwen3-8B-GGUF/Qwen3-8B-Q4_K_M.gguf"
    assert res.effective["context_len"].value == 16384
    # 14_*: `qwen3-1  | (VllmWorker rank=N pid=N)`: the lowest rank's value, all ranks kept
    res = _scan("\n".join(_lines("14_")) + "\n")
    read = res.effective["weights_read_s"]
    assert (read.value, read.rank) == (558.37, "VllmWorker rank=0")
    assert len(read.observations) == 4


def test_caret_notation_ansi_and_buildkite_prefix() -> None:
    # vLLM CI log pasted into an issue (Buildkite timestamp, colours in caret notation);
    # the paste is cut inside the message
    line = ("[2026-01-26T17:25:37Z] ^[[0;36m(EngineCore_DP0 pid=738)^[[0;0m ^[[31mERROR^[[0m "
            "^[[90m01-26 09:25:37^[[0m ^[[90m[core.py:935]^[[0m ValueError: Free memory on device cuda:0 "
            "(1.54/22.05 GiB) on startup is less than desired GPU memory utilization")
    res = _scan(line + "\n")
    err = res.errors[0]
    assert err.type == "ValueError"
    assert err.rank == "EngineCore_DP0"
    assert err.message.startswith("Free memory on device cuda:0 (1.54/22.05 GiB)")
