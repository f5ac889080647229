-- id: engine.dead_but_serving
-- title: The server kept answering HTTP 200 after the engine died
-- severity: critical
-- explanation: The log shows successful HTTP responses after the first fatal error: the API
--   process (or a health endpoint) stayed up while the engine behind it was dead. Load balancers
--   and benchmark clients then see a healthy server and may record empty or failed generations
--   as successes. Only what the log proves is used: the schema has no clock for errors, so client
--   requests are not compared with the error time.
-- remedy: Treat the run as crashed; use /health checks that reach the engine, restart on fatal
--   errors (vLLM exits on EngineDeadError in recent versions), and rerun the benchmark.
-- evidence: ok_count
WITH root AS (
    SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY ordinal) AS rn
    FROM errors
    WHERE ordinal = 0
), served AS (
    SELECT run_id, sum(ok_count) AS ok_count,
           list({'file': file, 'line': line, 'raw': raw} ORDER BY line) AS ev
    FROM http_after_fatal
    WHERE ok_count > 0
    GROUP BY run_id
)
SELECT s.run_id,
       s.ok_count,
       format('{} HTTP 200 response(s) after the fatal error{}', s.ok_count,
              CASE WHEN e.run_id IS NULL THEN '' ELSE format(' at line {} ({})', e.line, e.type) END) AS message,
       list_concat(CASE WHEN e.run_id IS NULL THEN []
                        ELSE [{'file': e.file, 'line': e.line, 'raw': e.raw}] END, s.ev) AS evidence
FROM served AS s
LEFT JOIN root AS e ON e.run_id = s.run_id AND e.rn = 1
ORDER BY s.run_id;
