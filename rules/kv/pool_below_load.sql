-- id: kv.pool_below_load
-- title: The KV cache cannot hold the benchmark's concurrent requests
-- severity: warning
-- explanation: At a benchmark point, max_concurrency requests each need input plus output tokens
--   of KV cache (random_input_len + random_output_len, or total tokens / completed requests).
--   When that exceeds the KV pool (kv_cache_tokens per engine times the data-parallel replicas),
--   the engine preempts or queues requests and the point does not measure the requested load.
-- remedy: Lower max_concurrency or the sequence lengths, add replicas, or give the KV cache more
--   memory (--gpu-memory-utilization / --mem-fraction-static, an fp8 KV cache).
-- evidence: tokens_needed, pool_tokens, max_concurrency, tokens_per_request, replicas
WITH kv AS (
    SELECT run_id, value_num AS kv_tokens, file, line, raw,
           row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
    FROM facts
    WHERE section = 'effective' AND name = 'kv_cache_tokens' AND value_num > 0
), dp AS (
    SELECT run_id, value_num AS replicas, file, line, raw,
           row_number() OVER (PARTITION BY run_id
                              ORDER BY (section = 'effective') DESC, (file = 'cmd.sh') DESC, line) AS rn
    FROM facts
    WHERE name IN ('data_parallel_size', 'dp_size') AND value_num >= 1
), need AS (
    SELECT b.run_id, b.source_file, b.line, b.point_index, b.max_concurrency,
           coalesce(b.random_input_len + b.random_output_len,
                    (b.total_input_tokens + b.total_output_tokens) / nullif(b.completed, 0)) AS tokens_per_request
    FROM bench_points AS b
    WHERE b.max_concurrency > 0
), worst AS (
    SELECT n.*, n.max_concurrency * n.tokens_per_request AS tokens_needed,
           row_number() OVER (PARTITION BY n.run_id ORDER BY n.max_concurrency * n.tokens_per_request DESC) AS rn
    FROM need AS n
    WHERE n.tokens_per_request > 0
)
SELECT w.run_id,
       w.tokens_needed,
       k.kv_tokens * coalesce(d.replicas, 1) AS pool_tokens,
       w.max_concurrency,
       w.tokens_per_request,
       coalesce(d.replicas, 1) AS replicas,
       format('{} concurrent requests x {} tokens = {} tokens of KV cache needed, pool holds {} tokens ({} x {} replica(s))',
              w.max_concurrency::BIGINT, round(w.tokens_per_request)::BIGINT, round(w.tokens_needed)::BIGINT,
              (k.kv_tokens * coalesce(d.replicas, 1))::BIGINT, k.kv_tokens::BIGINT, coalesce(d.replicas, 1)::BIGINT) AS message,
       list_concat(
           [{'file': k.file, 'line': k.line, 'raw': k.raw},
            {'file': w.source_file, 'line': w.line,
             'raw': format('bench point {}: max_concurrency={}, tokens/request={}', w.point_index,
                           w.max_concurrency::BIGINT, round(w.tokens_per_request)::BIGINT)}],
           CASE WHEN d.run_id IS NULL THEN []
                ELSE [{'file': d.file, 'line': d.line, 'raw': d.raw}] END) AS evidence
FROM worst AS w
JOIN kv AS k ON k.run_id = w.run_id AND k.rn = 1
LEFT JOIN dp AS d ON d.run_id = w.run_id AND d.rn = 1
WHERE w.rn = 1 AND w.tokens_needed > k.kv_tokens * coalesce(d.replicas, 1)
ORDER BY w.run_id;
