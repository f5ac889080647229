-- id: backend.fallback
-- title: The engine fell back to a slower kernel or graph mode
-- severity: warning
-- explanation: The log says the engine did not use the backend the hardware or configuration
--   asked for: FlashAttention refused for FP8 KV cache, weight-only FP4 through Marlin on a GPU
--   without native FP4, full CUDA graphs downgraded to piecewise, CUTLASS MoE replaced by auto.
--   Benchmark figures then describe the fallback path, not the configuration named in the
--   campaign table.
-- remedy: Record the effective backend next to the results, or change the combination (KV cache
--   dtype, quantization, GPU, attention backend, CUDA graph mode) so the intended path is used.
-- evidence: fallbacks
WITH f AS (
    SELECT run_id, file, line, raw, value_json,
           row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
    FROM facts
    WHERE section = 'effective' AND name = 'backend_fallbacks'
)
SELECT run_id,
       json_array_length(value_json::JSON) AS fallbacks,
       format('{} backend fallback(s): {}', json_array_length(value_json::JSON),
              left(json_extract_string(value_json::JSON, '$[0]'), 200)) AS message,
       [{'file': file, 'line': line, 'raw': raw}] AS evidence
FROM f
WHERE rn = 1
ORDER BY run_id;
