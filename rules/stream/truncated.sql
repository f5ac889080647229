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
), bound AS (
    -- the largest output-token threshold of any point: a request above it cannot be truncated,
    -- so most of the requests table is dropped before the join
    SELECT coalesce(max(thr.frac * b.random_output_len), 0) AS max_thr FROM bench_points AS b, thr
), cand AS (
    SELECT q.run_id, q.source_file, q.line, q.point_index, q.request_index, q.output_tokens,
           q.finish_reason, q.output_chars
    FROM requests AS q
    WHERE q.success AND coalesce(q.error, '') = ''
      AND (q.output_tokens IS NULL OR q.output_tokens = 0 OR q.output_tokens < (SELECT max_thr FROM bound))
), req AS (
    SELECT c.*, b.random_output_len, b.source_file AS b_file, b.line AS b_line
    FROM cand AS c
    LEFT JOIN bench_points AS b
      ON b.run_id = c.run_id AND b.point_index = c.point_index AND b.source_file = c.source_file
), bad AS (
    SELECT r.*
    FROM req AS r, thr
    WHERE r.output_tokens = 0
       OR (r.output_tokens IS NULL AND r.finish_reason IS NULL AND coalesce(r.output_chars, 0) = 0)
       OR (r.output_tokens < thr.frac * r.random_output_len AND coalesce(r.finish_reason, '') <> 'stop')
), tot AS (
    SELECT run_id, count(*) AS successful FROM requests
    WHERE success AND coalesce(error, '') = '' GROUP BY run_id
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
           list_sort(list_distinct(list({'file': b.b_file, 'line': b.b_line,
                               'raw': format('bench point {}: random_output_len={}', b.point_index,
                                             b.random_output_len::BIGINT)})
                         FILTER (WHERE b.b_file IS NOT NULL))),
           (list({'file': b.source_file, 'line': b.line,
                  'raw': format('request {}: success=true, output_tokens={}, finish_reason={}', b.request_index,
                                coalesce(b.output_tokens::VARCHAR, 'NULL'), coalesce(b.finish_reason, 'NULL'))}
                 ORDER BY b.output_tokens NULLS FIRST, b.request_index))[1:5]) AS evidence
FROM bad AS b
JOIN tot AS t ON t.run_id = b.run_id
GROUP BY b.run_id
ORDER BY b.run_id;
