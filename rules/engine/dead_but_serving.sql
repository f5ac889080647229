-- id: engine.dead_but_serving
-- title: The server kept answering HTTP 200 after the engine died
-- severity: critical
-- explanation: Successful HTTP responses came after the first fatal error: the log's access
--   lines after it, or benchmark requests counted as successful that started after the error's
--   time (only when both carry a time on the UTC clock: errors.ts_utc, requests.ts_start_utc).
--   The API process (or a health endpoint) stayed up while the engine behind it was dead; load
--   balancers and benchmark clients see a healthy server and may record empty generations as
--   successes.
-- remedy: Treat the run as crashed; use /health checks that reach the engine, restart on fatal
--   errors (vLLM exits on EngineDeadError in recent versions), and rerun the benchmark.
-- evidence: ok_count
WITH root AS (
    SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY ordinal) AS rn
    FROM errors
    WHERE ordinal = 0
), logged AS (
    SELECT run_id, sum(ok_count) AS ok_count,
           list({'file': file, 'line': line, 'raw': raw} ORDER BY line) AS ev
    FROM http_after_fatal
    WHERE ok_count > 0
    GROUP BY run_id
), client AS (
    SELECT q.run_id, count(*) AS ok_count,
           (list({'file': q.source_file, 'line': q.line,
                  'raw': format('request {}: success=true, started {} s after the fatal error',
                                q.request_index, round(q.ts_start_utc - e.ts_utc, 3))}
                 ORDER BY q.ts_start_utc))[1:3] AS ev
    FROM requests AS q
    JOIN root AS e ON e.run_id = q.run_id AND e.rn = 1
    WHERE q.success AND e.ts_utc IS NOT NULL AND q.ts_start_utc > e.ts_utc
    GROUP BY q.run_id
), served AS (
    SELECT run_id, sum(ok_count) AS ok_count, flatten(list(ev)) AS ev,
           bool_or(src = 'log') AS from_log, bool_or(src = 'client') AS from_client
    FROM (SELECT run_id, ok_count, ev, 'log' AS src FROM logged
          UNION ALL SELECT run_id, ok_count, ev, 'client' AS src FROM client)
    GROUP BY run_id
)
SELECT s.run_id,
       s.ok_count,
       format('{} {} after the fatal error{}', s.ok_count,
              CASE WHEN s.from_log AND s.from_client THEN 'HTTP 200 response(s) and successful benchmark request(s)'
                   WHEN s.from_client THEN 'successful benchmark request(s)'
                   ELSE 'HTTP 200 response(s)' END,
              CASE WHEN e.run_id IS NULL THEN '' ELSE format(' at line {} ({})', e.line, e.type) END) AS message,
       list_concat(CASE WHEN e.run_id IS NULL THEN []
                        ELSE [{'file': e.file, 'line': e.line, 'raw': e.raw}] END, s.ev) AS evidence
FROM served AS s
LEFT JOIN root AS e ON e.run_id = s.run_id AND e.rn = 1
ORDER BY s.run_id;
