-- id: spec.kv_cost
-- title: Speculative decoding took KV cache from the target model
-- severity: info
-- explanation: A run with speculative decoding holds fewer KV tokens than a run of the same model
--   and parallel layout without it in the same archive: the draft model's weights and KV cache
--   and the verify buffers come out of the same memory. Its capacity at long contexts and high
--   concurrency is lower, so compare points at equal load, not equal configuration names.
-- remedy: Read both runs' capacity (`forensics capacity RUN_A RUN_B`); raise memory for the KV
--   cache, shorten the draft (fewer speculative tokens), or cap concurrency for the speculative run.
-- evidence: kv_tokens, kv_tokens_without_spec, baseline_run
WITH spec AS (
    SELECT run_id, file, line, raw,
           row_number() OVER (PARTITION BY run_id ORDER BY file, line) AS rn
    FROM facts
    WHERE section = 'requested'
      AND ((name = 'speculative_config' AND value_json NOT IN ('null', '"None"', '{}'))
           OR (name IN ('speculative_algorithm', 'speculative_model', 'speculative_draft_model_path')
               AND value_json NOT IN ('null', '"None"')))
), kv AS (
    SELECT run_id, value_num AS kv, file, line, raw,
           row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
    FROM facts
    WHERE section = 'effective' AND name = 'kv_cache_tokens' AND value_num > 0
), model AS (
    SELECT run_id, any_value(value_text) AS model FROM facts
    WHERE section = 'meta' AND name = 'model' GROUP BY run_id
), tp AS (
    SELECT run_id, max(value_num) AS tp FROM facts
    WHERE section = 'requested' AND name IN ('tensor_parallel_size', 'tp_size') GROUP BY run_id
), pairs AS (
    SELECT s.run_id, b.run_id AS baseline_run, ks.kv, kb.kv AS kv_base,
           s.file AS sf, s.line AS sl, s.raw AS sr, ks.file AS kf, ks.line AS kl, ks.raw AS kr,
           kb.file AS bf, kb.line AS bl, kb.raw AS br,
           row_number() OVER (PARTITION BY s.run_id ORDER BY kb.kv DESC, b.run_id) AS rn
    FROM spec AS s
    JOIN kv AS ks ON ks.run_id = s.run_id AND ks.rn = 1
    JOIN model AS ms ON ms.run_id = s.run_id
    JOIN runs AS b ON b.run_id <> s.run_id
    JOIN model AS mb ON mb.run_id = b.run_id AND mb.model = ms.model
    JOIN kv AS kb ON kb.run_id = b.run_id AND kb.rn = 1
    LEFT JOIN tp AS ts ON ts.run_id = s.run_id
    LEFT JOIN tp AS tb ON tb.run_id = b.run_id
    WHERE s.rn = 1
      AND b.run_id NOT IN (SELECT run_id FROM spec)
      AND coalesce(ts.tp, 1) = coalesce(tb.tp, 1)
      AND ks.kv < 0.9 * kb.kv
)
SELECT run_id,
       kv AS kv_tokens,
       kv_base AS kv_tokens_without_spec,
       baseline_run,
       format('speculative decoding leaves {} KV tokens, {}% of the {} that run {} holds without it (same model and TP)',
              kv::BIGINT, round(100 * kv / kv_base)::BIGINT, kv_base::BIGINT, baseline_run) AS message,
       [{'file': sf, 'line': sl, 'raw': sr}, {'file': kf, 'line': kl, 'raw': kr}, {'file': bf, 'line': bl, 'raw': br}] AS evidence
FROM pairs
WHERE rn = 1
ORDER BY run_id;
