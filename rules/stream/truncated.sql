-- id: stream.truncated
-- title: Successful responses came back truncated
-- severity: warning
-- explanation: The benchmark counted requests as successful although they returned no output
--   tokens, or far fewer than the point asked for (random_output_len) without a natural stop and
--   without an error. Usually a dropped stream or a dead engine answering with empty bodies; the
--   point's throughput and TPOT are then computed over responses that were never generated.
-- remedy: Look at the server log around the point for errors, rerun with --ignore-eos for fixed
--   output lengths, and discard the point.
-- evidence: truncated, successful, min_output_tokens
WITH thr AS (
    SELECT value AS frac FROM rule_settings WHERE key = 'truncated_fraction'
), req AS (
    -- only the columns used: requests rows are many (10M in a 1,000-run campaign)
    SELECT q.run_id, q.source_file, q.line, q.point_index, q.request_index, q.output_tokens, q.finish_reason,
           q.output_chars, b.random_output_len, b.source_file AS b_file, b.line AS b_line
    FROM requests AS q
    LEFT JOIN bench_points AS b
      ON b.run_id = q.run_id AND b.point_index = q.point_index AND b.source_file = q.source_file
    WHERE q.success AND coalesce(q.error, '') = ''
), bad AS (
    SELECT r.*
    FROM req AS r, thr
    WHERE r.output_tokens = 0
       OR (r.output_tokens IS NULL AND r.finish_reason IS NULL AND coalesce(r.output_chars, 0) = 0)
       OR (r.output_tokens < thr.frac * r.random_output_len AND coalesce(r.finish_reason, '') <> 'stop')
), tot AS (
    SELECT run_id, count(*) AS successful FROM req GROUP BY run_id
)
SELECT b.run_id,
       count(*) AS truncated,
       any_value(t.successful) AS successful,
       min(b.output_tokens) AS min_output_tokens,
       format('{} of {} successful request(s) returned truncated output (fewest: {} tokens{})',
              count(*), any_value(t.successful), coalesce(min(b.output_tokens)::VARCHAR, 'unknown'),
              CASE WHEN max(b.random_output_len) IS NULL THEN ''
                   ELSE format(', {} requested', max(b.random_output_len)::BIGINT) END) AS message,
       list_concat(
           list_distinct(list({'file': b.b_file, 'line': b.b_line,
                               'raw': format('bench point {}: random_output_len={}', b.point_index,
                                             b.random_output_len::BIGINT)})
                         FILTER (WHERE b.b_file IS NOT NULL)),
           (list({'file': b.source_file, 'line': b.line,
                  'raw': format('request {}: success=true, output_tokens={}, finish_reason={}', b.request_index,
                                coalesce(b.output_tokens::VARCHAR, 'NULL'), coalesce(b.finish_reason, 'NULL'))}
                 ORDER BY b.output_tokens NULLS FIRST, b.request_index))[1:5]) AS evidence
FROM bad AS b
JOIN tot AS t ON t.run_id = b.run_id
GROUP BY b.run_id
ORDER BY b.run_id;
