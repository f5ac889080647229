-- id: engine.died_after_ready
-- title: The engine crashed after it was ready
-- severity: error
-- explanation: The server became ready and later hit a fatal error. Requests after the crash fail
--   or hang, so benchmark points that overlap it are not valid; the root-cause error says why.
-- remedy: Fix the root-cause error in the evidence (often memory: lower --gpu-memory-utilization
--   headroom, cuda-graph sizes or concurrency), then rerun the affected points.
-- evidence: error_type, error_message, ready_line
WITH root AS (
    SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY ordinal) AS rn
    FROM errors
    WHERE ordinal = 0
)
SELECT r.run_id,
       e.type AS error_type,
       e.message AS error_message,
       r.ready_line,
       format('engine crashed after it was ready (line {}){}', coalesce(r.ready_line::VARCHAR, '?'),
              CASE WHEN e.run_id IS NULL THEN ''
                   ELSE format(': {} at line {}', concat_ws(': ', e.type, nullif(e.message, '')), e.line) END) AS message,
       list_concat(
           [{'file': r.log_file, 'line': r.ready_line, 'raw': 'first ready evidence (runs.ready_line)'}],
           CASE WHEN e.run_id IS NULL THEN []
                ELSE [{'file': e.file, 'line': e.line, 'raw': e.raw}] END) AS evidence
FROM runs AS r
LEFT JOIN root AS e ON e.run_id = r.run_id AND e.rn = 1
WHERE r.outcome = 'crashed_after_ready'
ORDER BY r.run_id;
