-- id: startup.failed
-- title: The engine failed to start
-- severity: error
-- explanation: The log ends without the server becoming ready and shows a fatal error before
--   readiness. No benchmark number from this run measures the engine; the root-cause error
--   (the first exception raised, not a wrapper such as EngineDeadError) says why.
-- remedy: Fix the root-cause error shown in the evidence (`forensics scan LOG` lists all errors),
--   then relaunch.
-- evidence: error_type, error_message
WITH root AS (
    SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY ordinal) AS rn
    FROM errors
    WHERE ordinal = 0
)
SELECT r.run_id,
       e.type AS error_type,
       e.message AS error_message,
       CASE WHEN e.run_id IS NULL THEN 'engine failed to start (no root-cause error line recognised)'
            ELSE format('engine failed to start: {}', concat_ws(': ', e.type, nullif(e.message, ''))) END AS message,
       CASE WHEN e.run_id IS NULL
            THEN [{'file': r.log_file, 'line': NULL::INTEGER, 'raw': 'outcome=failed_startup'}]
            ELSE [{'file': e.file, 'line': e.line, 'raw': e.raw}] END AS evidence
FROM runs AS r
LEFT JOIN root AS e ON e.run_id = r.run_id AND e.rn = 1
WHERE r.outcome = 'failed_startup'
ORDER BY r.run_id;
