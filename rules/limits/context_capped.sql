-- id: limits.context_capped
-- title: The engine serves a shorter context than requested
-- severity: warning
-- explanation: The launch asked for a maximum context (vLLM --max-model-len, SGLang
--   --context-length) but the engine serves a shorter one, or one engine's KV pool holds fewer
--   tokens than a single request of the requested length. Long prompts are then rejected or
--   cannot run even alone.
-- remedy: Give the KV cache more memory or GPUs, use an fp8 KV cache, or request the context the
--   engine reports and benchmark within it.
-- evidence: requested, served
WITH req AS (
    SELECT run_id, value_num AS requested, file, line, raw,
           row_number() OVER (PARTITION BY run_id ORDER BY (file = 'cmd.sh') DESC, line) AS rn
    FROM facts
    WHERE section = 'requested' AND name IN ('max_model_len', 'context_length') AND value_num > 0
), eff AS (
    SELECT run_id, name, value_num, file, line, raw,
           row_number() OVER (PARTITION BY run_id, name ORDER BY line) AS rn
    FROM facts
    WHERE section = 'effective' AND name IN ('context_len', 'kv_cache_tokens') AND value_num IS NOT NULL
), hits AS (
    SELECT r.run_id, r.requested, e.value_num AS served,
           CASE WHEN e.name = 'context_len'
                THEN format('requested context {} tokens, engine serves {}', r.requested::BIGINT, e.value_num::BIGINT)
                ELSE format('requested context {} tokens, one engine''s KV pool holds only {}', r.requested::BIGINT, e.value_num::BIGINT)
           END AS msg,
           [{'file': r.file, 'line': r.line, 'raw': r.raw}, {'file': e.file, 'line': e.line, 'raw': e.raw}] AS ev,
           e.name = 'context_len' AS is_ctx
    FROM req AS r
    JOIN eff AS e ON e.run_id = r.run_id AND e.rn = 1
    WHERE r.rn = 1 AND e.value_num > 0 AND e.value_num < r.requested
)
SELECT run_id,
       any_value(requested) AS requested,
       min(served) AS served,
       string_agg(msg, '; ' ORDER BY is_ctx DESC) AS message,
       flatten(list(ev ORDER BY is_ctx DESC)) AS evidence
FROM hits
GROUP BY run_id
ORDER BY run_id;
