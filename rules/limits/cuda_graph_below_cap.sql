-- id: limits.cuda_graph_below_cap
-- title: CUDA graphs stop below the running-request cap
-- severity: info
-- explanation: The largest decode batch captured as a CUDA graph is smaller than the engine's
--   running-request cap. Decode steps with more running requests fall back to eager execution,
--   so throughput at high concurrency drops in a step that has nothing to do with the model.
-- remedy: Raise --cuda-graph-max-bs (SGLang) or --max-cudagraph-capture-size / cudagraph sizes
--   (vLLM) to the running cap, if memory allows.
-- evidence: cuda_graph_max_bs, cap
WITH g AS (
    SELECT run_id, value_num AS bs, file, line, raw, row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
    FROM facts WHERE section = 'effective' AND name = 'cuda_graph_max_bs' AND value_num > 0
), c AS (
    SELECT run_id, value_num AS cap, file, line, raw, row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
    FROM facts WHERE section = 'effective' AND name = 'max_running_requests' AND value_num > 0
)
SELECT g.run_id,
       g.bs AS cuda_graph_max_bs,
       c.cap,
       format('CUDA graphs cover batches up to {}, engine runs up to {} requests', g.bs::BIGINT, c.cap::BIGINT) AS message,
       [{'file': g.file, 'line': g.line, 'raw': g.raw}, {'file': c.file, 'line': c.line, 'raw': c.raw}] AS evidence
FROM g
JOIN c ON c.run_id = g.run_id AND c.rn = 1
WHERE g.rn = 1 AND g.bs < c.cap
ORDER BY g.run_id;
