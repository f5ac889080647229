-- id: quality.probe_regressed
-- title: A quality probe passed, then failed later in the same run
-- severity: error
-- explanation: The same probe (same name) passed earlier in the run and failed later, typically
--   before and after a load sweep. The engine's output degraded under or after load (KV cache
--   corruption, FP8 overflow, a speculative-decoding bug), so throughput figures measured in
--   between may come from wrong answers.
-- remedy: Rerun the probe alone on a fresh server to confirm; bisect the sweep points between the
--   passing and the failing probe; check FP8 scales and speculative decoding settings.
-- evidence: probe, score_before, score_after
WITH p AS (
    SELECT run_id, name, ok, score, source_file, line, record_index, raw,
           row_number() OVER (PARTITION BY run_id, name ORDER BY source_file, coalesce(line, record_index)) AS seq
    FROM probes
    WHERE name IS NOT NULL AND ok IS NOT NULL
), pairs AS (
    SELECT a.run_id, a.name, a.score AS score_before, b.score AS score_after,
           a.source_file AS fa, a.line AS la, a.raw AS ra, b.source_file AS fb, b.line AS lb, b.raw AS rb,
           row_number() OVER (PARTITION BY a.run_id, a.name ORDER BY b.seq, a.seq) AS rn
    FROM p AS a
    JOIN p AS b ON b.run_id = a.run_id AND b.name = a.name AND b.seq > a.seq
    WHERE a.ok AND NOT b.ok
)
SELECT run_id,
       name AS probe,
       score_before,
       score_after,
       format('probe {} passed (score {}) and later failed (score {})', name,
              coalesce(score_before::VARCHAR, 'n/a'), coalesce(score_after::VARCHAR, 'n/a')) AS message,
       [{'file': fa, 'line': la, 'raw': coalesce(ra, format('probe {} ok=true', name))},
        {'file': fb, 'line': lb, 'raw': coalesce(rb, format('probe {} ok=false', name))}] AS evidence
FROM pairs
WHERE rn = 1
ORDER BY run_id, probe;
