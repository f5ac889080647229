-- id: limits.running_below_requested
-- title: The engine allows fewer running requests than requested
-- severity: warning
-- explanation: The launch asked for a running-request cap (vLLM --max-num-seqs, SGLang
--   --max-running-requests) but the engine settled on a lower one, usually because the KV cache
--   or the state (mamba) cache could not hold that many sequences. Extra client concurrency then
--   waits in the queue and the benchmark measures queueing, not the requested batch size.
-- remedy: Give the KV cache more memory (raise --gpu-memory-utilization / --mem-fraction-static,
--   lower --max-model-len / --context-length), or request the cap the engine can hold.
-- evidence: requested, allowed
WITH req AS (
    SELECT run_id, value_num AS requested, file, line, raw,
           row_number() OVER (PARTITION BY run_id ORDER BY (file = 'cmd.sh') DESC, line) AS rn
    FROM facts
    WHERE section = 'requested' AND name IN ('max_num_seqs', 'max_running_requests') AND value_num IS NOT NULL
), eff AS (
    SELECT run_id, value_num AS allowed, file, line, raw,
           row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
    FROM facts
    WHERE section = 'effective' AND name = 'max_running_requests' AND value_num IS NOT NULL
)
SELECT r.run_id,
       r.requested,
       e.allowed,
       format('requested {} running requests, engine allowed {}', r.requested::BIGINT, e.allowed::BIGINT) AS message,
       [{'file': r.file, 'line': r.line, 'raw': r.raw}, {'file': e.file, 'line': e.line, 'raw': e.raw}] AS evidence
FROM req AS r
JOIN eff AS e ON e.run_id = r.run_id AND e.rn = 1
WHERE r.rn = 1 AND e.allowed < r.requested
ORDER BY r.run_id;
