-- id: kv.no_memory
-- title: No memory left for the KV cache
-- severity: error
-- explanation: After weights, activations and CUDA graphs the engine had no room (or negative room)
--   for KV cache blocks, allocated zero GPU blocks, or a pool too small to hold a single request of
--   the served context length. vLLM then refuses to start; SGLang may start and stall.
-- remedy: Raise --gpu-memory-utilization / --mem-fraction-static, lower --max-model-len /
--   --context-length, use more tensor-parallel GPUs or a quantized / fp8 KV cache.
-- evidence: reasons
WITH f AS (
    SELECT run_id, name, value_num, file, line, raw,
           row_number() OVER (PARTITION BY run_id, name ORDER BY line) AS rn
    FROM facts
    WHERE section = 'effective' AND name IN ('kv_cache_gib', 'kv_cache_tokens', 'gpu_blocks', 'context_len')
      AND value_num IS NOT NULL
), one AS (
    SELECT * FROM f WHERE rn = 1
), hits AS (
    SELECT run_id, format('KV cache memory is {} GiB', value_num) AS reason,
           [{'file': file, 'line': line, 'raw': raw}] AS ev
    FROM one WHERE name = 'kv_cache_gib' AND value_num <= 0
    UNION ALL
    SELECT run_id, format('KV cache holds {} tokens', value_num::BIGINT),
           [{'file': file, 'line': line, 'raw': raw}]
    FROM one WHERE name = 'kv_cache_tokens' AND value_num <= 0
    UNION ALL
    SELECT run_id, '0 GPU blocks allocated', [{'file': file, 'line': line, 'raw': raw}]
    FROM one WHERE name = 'gpu_blocks' AND value_num = 0
    UNION ALL
    SELECT k.run_id,
           format('KV pool of {} tokens cannot hold one {}-token request', k.value_num::BIGINT, c.value_num::BIGINT),
           [{'file': k.file, 'line': k.line, 'raw': k.raw}, {'file': c.file, 'line': c.line, 'raw': c.raw}]
    FROM one AS k
    JOIN one AS c ON c.run_id = k.run_id AND c.name = 'context_len'
    WHERE k.name = 'kv_cache_tokens' AND k.value_num > 0 AND k.value_num < c.value_num
)
SELECT run_id,
       string_agg(reason, '; ' ORDER BY reason) AS reasons,
       string_agg(reason, '; ' ORDER BY reason) AS message,
       flatten(list(ev ORDER BY reason)) AS evidence
FROM hits
GROUP BY run_id
ORDER BY run_id;
