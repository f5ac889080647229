-- id: bench.prefix_cache_hit
-- title: Requests were served from the prefix cache, not prefilled
-- severity: warning
-- explanation: A request's implied prefill rate (input tokens / TTFT) is higher than any GPU
--   prefills cold prompts (prefix_cache_ceiling_tps), or many times (prefix_cache_cold_ratio) the
--   median rate of the same run's requests of similar input length. Its prompt was mostly already
--   in the prefix cache, so TTFT and throughput at that point overstate cold performance.
-- remedy: Use prompts that do not repeat (random dataset with a fresh seed per point, or
--   --random-prefix-len 0), disable prefix caching (--no-enable-prefix-caching /
--   --disable-radix-cache) for cold numbers, or reset the cache between points.
-- evidence: hits, max_rate_tps, ttft_ms, input_tokens
WITH s AS (
    SELECT max(value) FILTER (WHERE key = 'prefix_cache_ceiling_tps') AS ceiling,
           max(value) FILTER (WHERE key = 'prefix_cache_cold_ratio') AS ratio
    FROM rule_settings
), r AS (
    -- only the columns used: requests rows are many (10M in a 1,000-run campaign)
    SELECT q.run_id, q.source_file, q.line, q.request_index, q.input_tokens, q.ttft_ms,
           q.input_tokens / (q.ttft_ms / 1000.0) AS rate,
           floor(log2(q.input_tokens)) AS bucket
    FROM requests AS q
    WHERE coalesce(q.success, true) AND q.input_tokens > 0 AND q.ttft_ms > 0
), m AS (
    SELECT run_id, bucket, median(rate) AS median_rate, count(*) AS n
    FROM r GROUP BY run_id, bucket
), hit AS (
    SELECT r.*, m.median_rate
    FROM r JOIN m USING (run_id, bucket), s
    WHERE r.rate > s.ceiling OR (m.n >= 5 AND r.rate > s.ratio * m.median_rate)
), top AS (
    -- the fastest hit of each run (ties: the lowest request index); an aggregate, not a sort
    SELECT run_id, count(*) AS hits,
           arg_max({'rate': rate, 'ttft_ms': ttft_ms, 'input_tokens': input_tokens, 'median_rate': median_rate,
                    'source_file': source_file, 'line': line, 'request_index': request_index},
                   (rate, -request_index)) AS t
    FROM hit GROUP BY run_id
)
SELECT run_id,
       hits,
       t.rate AS max_rate_tps,
       t.ttft_ms AS ttft_ms,
       t.input_tokens AS input_tokens,
       format('{} request(s) imply cache hits: up to {} input tokens in TTFT {} ms = {} tokens/s prefill (median of similar prompts in this run: {} tokens/s)',
              hits, t.input_tokens, round(t.ttft_ms, 1), round(t.rate)::BIGINT, round(t.median_rate)::BIGINT) AS message,
       [{'file': t.source_file, 'line': t.line,
         'raw': format('request {}: input_tokens={}, ttft_ms={}', t.request_index, t.input_tokens, round(t.ttft_ms, 3))}] AS evidence
FROM top
ORDER BY run_id;
