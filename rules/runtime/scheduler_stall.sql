-- id: runtime.scheduler_stall
-- title: The scheduler ran nothing while requests waited
-- severity: warning
-- explanation: Periodic stats lines show zero running requests while the waiting queue is not
--   empty. A healthy scheduler admits waiting work at once; a stall means it is blocked (KV cache
--   or state slots held by finished requests, a hung worker, a deadlock) and every request queued
--   behind it measures the stall, not the engine.
-- remedy: Look at the log around the first stalled line (watchdog dumps, "Scheduler debug info",
--   KV usage); on vLLM check for requests longer than the KV pool (they wait forever), on SGLang
--   for a full mamba/state pool; rerun the affected points after the fix.
-- evidence: stalled_lines, max_waiting
WITH st AS (
    SELECT run_id, file, line, time_raw, waiting, raw_kind, rn
    FROM (
        SELECT run_id, file, line, time_raw, waiting, kind AS raw_kind,
               row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
        FROM runtime
        WHERE running = 0 AND waiting > 0
    )
), agg AS (
    SELECT run_id, count(*) AS stalled_lines, max(waiting) AS max_waiting,
           (list({'file': file, 'line': line,
                  'raw': format('stats line: running=0, waiting={}{}', waiting::BIGINT,
                                CASE WHEN time_raw IS NULL THEN '' ELSE ' at ' || time_raw END)}
                 ORDER BY line))[1:3] AS evidence
    FROM st
    GROUP BY run_id
)
SELECT run_id,
       stalled_lines,
       max_waiting,
       format('{} stats line(s) show 0 running requests while up to {} waited', stalled_lines,
              max_waiting::BIGINT) AS message,
       evidence
FROM agg
ORDER BY run_id;
