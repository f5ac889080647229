-- id: bench.compile_during_sweep
-- title: Kernels were compiled after the server was ready
-- severity: warning
-- explanation: The log shows kernel compilation (vLLM graph compilation for a new shape,
--   FlashInfer JIT builds) after the server became ready, so it happened inside the first
--   measured requests: their TTFT includes compile time, and the first point of the sweep is
--   slower than the configuration.
-- remedy: Warm the server up with requests of every shape the sweep uses before measuring (or
--   discard the first point), or enable the compile cache so restarts do not recompile.
-- evidence: compile_events, first_compile_line, ready_line
WITH c AS (
    SELECT rt.run_id, rt.file, rt.line, rt.values_json, r.ready_line,
           row_number() OVER (PARTITION BY rt.run_id ORDER BY rt.line) AS rn,
           count(*) OVER (PARTITION BY rt.run_id) AS n
    FROM runtime AS rt
    JOIN runs AS r ON r.run_id = rt.run_id AND rt.file = r.log_file
    WHERE rt.kind = 'compile' AND r.ready_line IS NOT NULL AND rt.line > r.ready_line
)
SELECT run_id,
       n AS compile_events,
       line AS first_compile_line,
       ready_line,
       format('{} kernel compilation(s) after the server was ready (line {}), the first at line {}',
              n, ready_line, line) AS message,
       [{'file': file, 'line': ready_line, 'raw': format('ready (or first serving) evidence at line {}', ready_line)},
        {'file': file, 'line': line, 'raw': format('compile: {}', values_json)}] AS evidence
FROM c
WHERE rn = 1
ORDER BY run_id;
