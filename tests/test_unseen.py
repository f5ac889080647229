"""Real log excerpts found after the patterns were written (fixtures/logs/unseen, sources inside).

Each expectation was read off the excerpt by hand; the scan must read exactly these values
and nothing contradicting them.
"""
from __future__ import annotations

import pytest

from forensics.scan import scan_file

from .conftest import FIXTURES

UNSEEN = FIXTURES / "logs" / "unseen"

CASES = {
    "vllm_v1early_gpu_blocks_pr12569": ("vllm", "unknown", {
        "weights_gib": 67.7229, "dynamo_transform_s": 12.88, "torch_compile_s": 54.73,
        "gpu_blocks": 1381, "max_concurrency": 10.79, "max_concurrency_tokens": 2048}),
    "vllm_banner_nondefault_kv_tokens": ("vllm", "unknown", {
        "kv_cache_tokens": 2042016, "max_concurrency": 997.08, "max_concurrency_tokens": 2048}),
    "sglang_max_allowed_length_issue4048": ("sglang", "crashed_after_ready", {"max_allowed_input_len": 59862}),
    "sglang_2024_fill_batch_issue444": ("sglang", "ready", {}),
    "sglang_b200_cuda_graph_pr11830": ("sglang", "unknown", {
        "kv_cache_tokens": 2243474, "k_size_gib": 59.91, "v_size_gib": 59.91, "kv_cache_gib": 119.82,
        "kv_cache_dtype": "torch.bfloat16", "mem_pool_end_avail_gib": 40.03, "cuda_graph_s": 5.37,
        "cuda_graph_max_bs": 512}),
    "sglang_server_args_cut_gemma3": ("sglang", "unknown", {
        "weights_gib": 8.13, "kv_cache_tokens": 834615, "mem_pool_end_avail_gib": 14.61}),
    "vllm_omni_stage_prefix_pr1160": ("vllm", "unknown", {
        "kv_cache_gib": 100.43, "kv_cache_tokens": 2925232, "max_concurrency": 89.27,
        "max_concurrency_tokens": 32768, "init_engine_s": 2.6}),
    "vllm_2026_kv_cache_memory_bytes": ("vllm", "failed_startup", {
        "weights_read_s": 3.04, "attention_backend": "FLASHINFER", "torch_compile_s": 0.06,
        "kv_cache_gib": 4.25, "initial_free_gib": 31.16, "kv_padding_layers": 3, "kv_padding_waste_pct": 6.25}),
    "sglang_npu_kv_dtype_pr29853": ("sglang", "unknown", {
        "kv_cache_tokens": 387968, "kv_cache_gib": 11.84, "kv_cache_dtype": "torch.bfloat16"}),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_unseen_excerpt(name: str) -> None:
    engine, outcome, effective = CASES[name]
    res = scan_file(UNSEEN / f"{name}.log")
    assert res.engine == engine
    assert res.outcome == outcome
    for key, want in effective.items():
        assert key in res.effective, key
        got = res.effective[key].value
        assert got == pytest.approx(want) if isinstance(want, float) else got == want, (key, got)


def test_unseen_requested_and_ranks() -> None:
    res = scan_file(UNSEEN / "vllm_banner_nondefault_kv_tokens.log")
    assert res.engine_version.value == "0.19.1rc1.dev301+g60995c05b"
    assert res.model.value == "google/gemma-4-31B-it"
    assert res.requested["max_num_seqs"].value == 32 and res.requested["max_model_len"].value == 65536
    sgl = scan_file(UNSEEN / "sglang_server_args_cut_gemma3.log")
    # the ServerArgs line is cut mid-value (`log_requests=Fa`): complete items only
    assert sgl.requested["mem_fraction_static"].value == 0.88
    assert sgl.requested["watchdog_timeout"].value == 300
    assert "log_requests" not in sgl.requested
    npu = scan_file(UNSEEN / "sglang_npu_kv_dtype_pr29853.log")
    assert npu.effective["kv_cache_tokens"].rank == "TP4"  # the lowest rank printed wins
    fill = scan_file(UNSEEN / "sglang_2024_fill_batch_issue444.log")
    assert fill.runtime["peak_waiting"].value == 57 and fill.runtime["peak_running"].value == 9


@pytest.mark.parametrize("name,peaks", [
    ("sglang_2026_npu_hybrid_batches_pr30047", {
        "peak_running": 40, "peak_mamba_num": 160, "peak_mamba_usage": 0.8, "peak_input_throughput": 21186.13,
        "peak_accept_len": 3.13, "peak_gen_throughput": 155.34, "peak_waiting": 0}),
    ("sglang_decode_batch_eras", {
        "peak_running": 1010, "peak_waiting": 12279, "peak_token_usage": 0.93, "peak_gen_throughput": 1397.13}),
])
def test_unseen_batch_lines(name: str, peaks: dict) -> None:
    res = scan_file(UNSEEN / f"{name}.log")
    assert res.engine == "sglang" and res.outcome == "ready"
    for key, want in peaks.items():
        assert res.runtime[key].value == pytest.approx(want), key
