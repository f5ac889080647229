"""How the human labels of the corpus (`fixtures/corpus/*/*.json`) map to scan facts.

The labels were written before the fact vocabulary, so their key names differ. Every
label key is either mapped here to a place in the scan result, or listed in IGNORED with
the reason it is not a fact (free-text notes, per-worker breakdowns of a fact that is
asserted elsewhere). A label key in neither table fails the test, so nothing is skipped
silently.
"""
from __future__ import annotations

# label path -> (section of the scan result, fact name)
VLLM = {
    "model": ("meta", "model"),
    "vllm_version": ("meta", "engine_version"),
    "effective.kv_cache_tokens": ("effective", "kv_cache_tokens"),
    "effective.gpu_blocks": ("effective", "gpu_blocks"),
    "effective.cpu_blocks": ("effective", "cpu_blocks"),
    "effective.max_concurrency": ("effective", "max_concurrency"),
    "effective.max_concurrency_tokens_per_request": ("effective", "max_concurrency_tokens"),
    "effective.available_kv_cache_gib": ("effective", "kv_cache_gib"),
    "effective.model_weights_gib": ("effective", "weights_gib"),
    "effective.model_weights_mib": ("effective", "weights_gib", 1 / 1024),
    "effective.model_load_seconds": ("effective", "weights_load_s"),
    "effective.weights_load_seconds": ("effective", "weights_read_s"),
    "effective.cuda_graph_seconds": ("effective", "cuda_graph_s"),
    "effective.cuda_graph_gib": ("effective", "cuda_graph_gib"),
    "effective.cuda_graph_estimated_gib": ("effective", "cuda_graph_estimated_gib"),
    "effective.cudagraph_mode": ("effective", "cudagraph_mode"),
    "effective.torch_compile_seconds": ("effective", "torch_compile_s"),
    "effective.dynamo_bytecode_transform_seconds": ("effective", "dynamo_transform_s"),
    "effective.init_engine_seconds": ("effective", "init_engine_s"),
    "effective.max_model_len": ("effective", "context_len"),
    "effective.max_num_batched_tokens": ("effective", "max_num_batched_tokens"),
    "effective.estimated_max_model_len": ("effective", "estimated_max_model_len"),
    "effective.kv_cache_needed_gib": ("effective", "kv_cache_needed_gib"),
    "effective.kv_padding_layers": ("effective", "kv_padding_layers"),
    "effective.kv_padding_waste_max_pct": ("effective", "kv_padding_waste_pct"),
    "effective.num_gpu_blocks_override": ("effective", "num_gpu_blocks_override"),
    "backends.attention": ("effective", "attention_backend"),
    "backends.moe": ("effective", "moe_backend"),
    "backends.gemm": ("effective", "gemm_kernel"),
    "metrics_peak.peak_running": ("runtime", "peak_running"),
    "metrics_peak.peak_waiting": ("runtime", "peak_waiting"),
    "metrics_peak.peak_gpu_kv_cache_usage_pct": ("runtime", "peak_kv_usage_pct"),
    "metrics_peak.peak_prefix_cache_hit_rate_pct": ("runtime", "peak_prefix_hit_pct"),
    "metrics_peak.peak_mm_cache_hit_rate_pct": ("runtime", "peak_mm_hit_pct"),
    "preemption_warnings": ("runtime", "preemptions"),
    # a label of null says the log has no stats lines, so no runtime peak may be reported
    "metrics_peak": ("runtime", "peak_running"),
    "requested.speculative": ("requested", "speculative_config"),
}
for _k in ("max_model_len", "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization",
           "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size",
           "decode_context_parallel_size", "kv_cache_dtype", "block_size", "enable_prefix_caching",
           "quantization", "dtype", "enforce_eager"):
    VLLM[f"requested.{_k}"] = ("requested", _k)

SGLANG = {
    "model": ("meta", "model"),
    "model_arch": ("meta", "architecture"),
    "sglang_version": ("meta", "engine_version"),
    # The labels keep the summary line's figure apart from the pool size: #07/#08/#16/#28 show
    # `KV Cache is allocated. #tokens: N` (kv_cache_tokens) but no summary line, and label
    # max_total_num_tokens null. The summary line yields both facts (parsers/sglang/config.toml).
    "effective.max_total_num_tokens": ("effective", "max_total_num_tokens"),
    "effective.kv_cache_tokens": ("effective", "kv_cache_tokens"),
    "effective.max_running_requests": ("effective", "max_running_requests"),
    "effective.chunked_prefill_size": ("effective", "chunked_prefill_size"),
    "effective.max_prefill_tokens": ("effective", "max_prefill_tokens"),
    "effective.context_len": ("effective", "context_len"),
    "effective.available_gpu_mem_gb": ("effective", "available_gpu_mem_gib"),
    "effective.kv_cache_dtype": ("effective", "kv_cache_dtype"),
    "effective.k_size_gb": ("effective", "k_size_gib"),
    "effective.v_size_gb": ("effective", "v_size_gib"),
    "effective.kv_size_gb": ("effective", "kv_size_gib"),
    "effective.weight_mem_gb": ("effective", "weights_gib"),
    "effective.avail_mem_after_weights_gb": ("effective", "avail_mem_after_weights_gib"),
    "effective.mem_pool_end_avail_gb": ("effective", "mem_pool_end_avail_gib"),
    "effective.mamba_cache_slots": ("effective", "state_slots"),
    "effective.mamba_conv_state_gb": ("effective", "mamba_conv_state_gib"),
    "effective.mamba_ssm_state_gb": ("effective", "mamba_ssm_state_gib"),
    "effective.draft_kv_cache_tokens": ("effective", "draft_kv_cache_tokens"),
    "effective.cuda_graph_seconds": ("effective", "cuda_graph_s"),
    "effective.cuda_graph_max_bs_captured": ("effective", "cuda_graph_max_bs"),
    "available_memory_for_kv_cache_gb": ("effective", "kv_available_gib"),
    "batch_stats.peak_running_req": ("runtime", "peak_running"),
    "batch_stats.peak_queue_req": ("runtime", "peak_waiting"),
    "batch_stats.peak_token_usage": ("runtime", "peak_token_usage"),
    "batch_stats.peak_gen_throughput": ("runtime", "peak_gen_throughput"),
    "peak_input_throughput": ("runtime", "peak_input_throughput"),
    "peak_mamba_num": ("runtime", "peak_mamba_num"),
    "peak_mamba_usage": ("runtime", "peak_mamba_usage"),
    "peak_swa_token_usage": ("runtime", "peak_swa_token_usage"),
    "peak_pending_tokens": ("runtime", "peak_pending_tokens"),
}
for _k in ("tp_size", "dp_size", "ep_size", "pp_size", "mem_fraction_static", "max_running_requests",
           "max_total_tokens", "chunked_prefill_size", "context_length", "kv_cache_dtype",
           "attention_backend", "moe_runner_backend", "quantization", "disable_radix_cache",
           "disable_cuda_graph", "cuda_graph_max_bs", "enable_dp_attention", "speculative_algorithm",
           "speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens",
           "max_mamba_cache_size", "watchdog_timeout", "disable_flashinfer"):
    SGLANG[f"requested.{_k}"] = ("requested", _k)

# Checked by dedicated code in test_corpus.py, not by the tables above.
SPECIAL = {"outcome", "first_fatal_error", "fp8_scale_warnings", "ranks_seen", "launch_command"}

# Label keys that are not facts a scan reports, and why.
IGNORED_PREFIXES = {
    "extra": "free-form notes and per-worker breakdowns beside the labelled facts",
    "backends.notes": "free-text notes",
    "notes": "free text",
    "requested_source": "says where the human read the request; the test passes the command when given",
    "requested_per_issue_text": "values stated in the issue text, not in the log",
    "model_per_issue_text": "stated in the issue text, not in the log",
    "source_url": "provenance",
    "engine": "checked by test_engine_detected",
}
SGLANG_IGNORED = {
    # the top-level sglang_version of the SGLang labels is the version the issue reports (#01,
    # #22, #25, #31); none of those excerpts prints a version line, like requested_per_issue_text
    "sglang_version",
    # `backends: {}` (no backend line in the excerpt) flattens to the bare key; named backend
    # keys are listed below
    "backends",
    # free-text descriptions of backends, not a backend name the log prints as a value
    "backends.attention", "backends.attention_kernel", "backends.cute_dsl_gdn_decode",
    "backends.cutlass_backend_override", "backends.hierarchical_cache", "backends.hybrid_ssm",
    "backends.hybrid_swa", "backends.moe_runner", "backends.piecewise_cuda_graph",
    "backends.prefill_cuda_graph", "backends.tree_cache",
    # one-off observations written as prose or ranges in a single label
    "chunk_size_observed", "cuda_graph_begin_avail_gb", "cuda_graph_end_avail_gb",
    "cuda_graph_in_decode", "cuda_graph_mem_usage_gb", "fp8_kv_scaling_factors",
    "kv_pool_available_size_at_hang", "largest_decode_batch_with_cuda_graph", "line_prefix",
    "load_weight_begin_avail_gb", "mamba_state_slots_per_request", "max_cached_tokens_in_prefill",
    "max_running_requests_limited_by", "parallelism_from_prefixes.tp", "prefill_chunk_tokens_observed",
    "server_still_answering_after_scheduler_death", "spec_accept_len_range", "spec_accept_rate_range",
    "tree_cache_evictable_size_at_hang",
}

# Label values that are not in the log itself, or contradict the same label; each with why.
# The test drops these keys for that log (nothing else is relaxed).
CORRECTIONS = {
    "sglang/05_decode-batch-comma-format-retract": {
        "outcome": "labelled unknown, but the excerpt is steady decode batches with 6 running requests, which "
                   "only a ready server prints; log 11 (the same kind of excerpt) is labelled ready",
    },
    "vllm/23_v064-compose-no-memory-for-cache-blocks": {
        "vllm_version": "0.6.4.post1 is stated in the issue text; no line of the excerpt prints a version",
    },
    "vllm/29_v0202-enginedeaderror-on-request-500-shutdown": {
        "vllm_version": "0.20.2 is taken from the issue title (label notes say so); the log has no version line",
    },
    "vllm/41_v0290-selected-fp8-linear-kernel-one-liner": {
        "vllm_version": "0.29.0 is taken from an issue comment (label notes say so); the log has no version line",
    },
    "vllm/01_v053-qwen7b-gpu-blocks": {
        "effective.model_weights_gib": "null here contradicts model_weights_mib = 14737.2578 for the same line "
                                       "'Loading model weights took 14737.2578 MB'; the MiB key is asserted (as 14.39 GiB)",
    },
}
