-- Clean benchmark statistics: TEMP views over the archive, created on demand.
-- `forensics clean-stats` runs this file on a read-only connection; in the duckdb shell:
--   duckdb -readonly forensics.duckdb -c ".read rules/views/clean_stats.sql" -c "FROM clean_stats"
-- Files under rules/views/ are views, not rules: the rule loader skips this folder.
--
-- clean_request_flags: every per-request row with the reason it is excluded (NULL = kept):
--   failed     success = false or an error text (bench.failed_requests counts these);
--   truncated  stream.truncated's test, with its setting truncated_fraction;
--   cache_hit  bench.prefix_cache_hit's test, with prefix_cache_ceiling_tps and
--              prefix_cache_cold_ratio (similar prompts = same run, same floor(log2(input_tokens))).
--   The first that applies, in that order, is the reason. The thresholds come from rule_settings,
--   so `--set` overrides (a TEMP rule_settings) apply here as they do to the rules.
-- clean_excluded: the excluded rows only.
-- clean_stats: per benchmark point with per-request rows, the point's original figures next to
--   TTFT (mean/median/p99), TPOT ((e2e - ttft) / (output_tokens - 1), requests with more than one
--   output token) and output throughput (kept output tokens / the point's duration) recomputed
--   over the kept requests. Percentiles interpolate linearly, as numpy and the benchmark tools do.

CREATE OR REPLACE TEMP VIEW clean_request_flags AS
WITH s AS (
    SELECT max(value) FILTER (WHERE key = 'prefix_cache_ceiling_tps') AS ceiling,
           max(value) FILTER (WHERE key = 'prefix_cache_cold_ratio') AS ratio,
           max(value) FILTER (WHERE key = 'truncated_fraction') AS frac
    FROM rule_settings
), q AS (
    SELECT q.*, b.random_output_len,
           coalesce(q.success, true) AND q.input_tokens > 0 AND q.ttft_ms > 0 AS rate_ok
    FROM requests AS q
    LEFT JOIN bench_points AS b
      ON b.run_id = q.run_id AND b.point_index = q.point_index AND b.source_file = q.source_file
), r AS (
    SELECT q.*,
           CASE WHEN rate_ok THEN q.input_tokens / (q.ttft_ms / 1000.0) END AS rate,
           CASE WHEN rate_ok THEN floor(log2(q.input_tokens)) END AS bucket
    FROM q
), m AS (
    SELECT r.*,
           median(rate) OVER (PARTITION BY run_id, bucket) AS median_rate,
           count(rate) OVER (PARTITION BY run_id, bucket) AS similar
    FROM r
), f AS (
    SELECT m.*,
           (m.success IS NOT DISTINCT FROM false OR coalesce(m.error, '') <> '') AS is_failed,
           coalesce(m.success AND coalesce(m.error, '') = '' AND (
                m.output_tokens = 0
             OR (m.output_tokens IS NULL AND m.finish_reason IS NULL AND coalesce(m.output_chars, 0) = 0)
             OR (m.output_tokens < s.frac * m.random_output_len AND coalesce(m.finish_reason, '') <> 'stop')),
             false) AS is_truncated,
           coalesce(m.rate > s.ceiling OR (m.similar >= 5 AND m.rate > s.ratio * m.median_rate), false) AS is_cache_hit
    FROM m, s
)
SELECT run_id, source_file, point_index, request_index, line,
       CASE WHEN is_failed THEN 'failed' WHEN is_truncated THEN 'truncated' WHEN is_cache_hit THEN 'cache_hit' END AS reason,
       CASE WHEN is_failed THEN format('success={}, error={}', coalesce(success::VARCHAR, 'NULL'), coalesce(error, 'NULL'))
            WHEN is_truncated THEN format('output_tokens={} of random_output_len={}, finish_reason={}',
                                          coalesce(output_tokens::VARCHAR, 'NULL'),
                                          coalesce(random_output_len::BIGINT::VARCHAR, 'NULL'),
                                          coalesce(finish_reason, 'NULL'))
            WHEN is_cache_hit THEN format('input_tokens={} in ttft {} ms = {} tokens/s (median of similar prompts {} tokens/s)',
                                          input_tokens, round(ttft_ms, 3), round(rate)::BIGINT,
                                          round(median_rate)::BIGINT) END AS why,
       input_tokens, output_tokens, ttft_ms, e2e_ms, rate AS prefill_rate_tps, median_rate AS similar_median_rate_tps,
       CASE WHEN output_tokens > 1 THEN (e2e_ms - ttft_ms) / (output_tokens - 1) END AS tpot_ms
FROM f;

CREATE OR REPLACE TEMP VIEW clean_excluded AS
SELECT run_id, source_file, point_index, request_index, line, reason, why, input_tokens, output_tokens, ttft_ms
FROM clean_request_flags
WHERE reason IS NOT NULL;

CREATE OR REPLACE TEMP VIEW clean_stats AS
WITH g AS (
    SELECT run_id, source_file, point_index,
           count(*) AS requests,
           count(*) FILTER (WHERE reason IS NULL) AS kept,
           count(*) FILTER (WHERE reason = 'cache_hit') AS excluded_cache_hit,
           count(*) FILTER (WHERE reason = 'truncated') AS excluded_truncated,
           count(*) FILTER (WHERE reason = 'failed') AS excluded_failed,
           avg(ttft_ms) FILTER (WHERE reason IS NULL) AS clean_mean_ttft_ms,
           quantile_cont(ttft_ms, 0.5) FILTER (WHERE reason IS NULL) AS clean_median_ttft_ms,
           quantile_cont(ttft_ms, 0.99) FILTER (WHERE reason IS NULL) AS clean_p99_ttft_ms,
           avg(tpot_ms) FILTER (WHERE reason IS NULL) AS clean_mean_tpot_ms,
           quantile_cont(tpot_ms, 0.5) FILTER (WHERE reason IS NULL) AS clean_median_tpot_ms,
           quantile_cont(tpot_ms, 0.99) FILTER (WHERE reason IS NULL) AS clean_p99_tpot_ms,
           sum(output_tokens) FILTER (WHERE reason IS NULL) AS clean_output_tokens
    FROM clean_request_flags
    GROUP BY run_id, source_file, point_index
)
SELECT g.run_id, g.source_file, g.point_index, b.line, b.max_concurrency, b.request_rate,
       g.requests, g.kept, g.excluded_cache_hit, g.excluded_truncated, g.excluded_failed,
       b.mean_ttft_ms, g.clean_mean_ttft_ms, b.median_ttft_ms, g.clean_median_ttft_ms,
       b.p99_ttft_ms, g.clean_p99_ttft_ms,
       b.mean_tpot_ms, g.clean_mean_tpot_ms, b.median_tpot_ms, g.clean_median_tpot_ms,
       b.p99_tpot_ms, g.clean_p99_tpot_ms,
       b.duration_s, b.output_throughput,
       CASE WHEN b.duration_s > 0 THEN g.clean_output_tokens / b.duration_s END AS clean_output_throughput
FROM g
LEFT JOIN bench_points AS b
  ON b.run_id = g.run_id AND b.source_file = g.source_file AND b.point_index IS NOT DISTINCT FROM g.point_index;
