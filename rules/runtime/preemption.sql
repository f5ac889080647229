-- id: runtime.preemption
-- title: The engine preempted running requests
-- severity: warning
-- explanation: The engine ran out of KV cache while serving and preempted (vLLM) or retracted
--   (SGLang) running requests, which recompute their prefill later. Latency of those requests and
--   throughput of the point are worse than the configuration can do with enough KV cache.
-- remedy: Lower the benchmark concurrency, raise KV cache memory, or lower --max-num-seqs /
--   --max-running-requests so requests queue instead of being preempted.
-- evidence: preemptions
WITH p AS (
    SELECT run_id, value_num AS preemptions, file, line, raw,
           row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
    FROM facts
    WHERE section = 'runtime' AND name = 'preemptions' AND value_num > 0
), kv AS (
    SELECT run_id, file, line, raw, row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
    FROM facts
    WHERE section = 'effective' AND name = 'kv_cache_tokens'
)
SELECT p.run_id,
       p.preemptions,
       format('engine preempted or retracted running requests {} time(s)', p.preemptions::BIGINT) AS message,
       list_concat([{'file': p.file, 'line': p.line, 'raw': p.raw}],
                   CASE WHEN k.run_id IS NULL THEN [] ELSE [{'file': k.file, 'line': k.line, 'raw': k.raw}] END) AS evidence
FROM p
LEFT JOIN kv AS k ON k.run_id = p.run_id AND k.rn = 1
WHERE p.rn = 1
ORDER BY p.run_id;
