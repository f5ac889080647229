-- id: precision.fp8_uncalibrated
-- title: FP8 KV cache runs with uncalibrated scales
-- severity: warning
-- explanation: The engine warned that it uses a default scale (1.0) for an fp8 KV cache or
--   attention because the checkpoint has no calibrated scaling factors. Accuracy can drop, mostly
--   on long contexts. The finding is raised to error (severity column) when a quality probe of the
--   same run failed.
-- remedy: Use a checkpoint with calibrated KV scales (llm-compressor / ModelOpt), or serve the KV
--   cache in bf16 (--kv-cache-dtype auto), then rerun the quality probes.
-- evidence: warnings, failed_probes
WITH w AS (
    SELECT run_id, coalesce(json_array_length(value_json), 1) AS warnings, file, line, raw,
           row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
    FROM facts
    WHERE name = 'fp8_scale_warnings'
), p AS (
    SELECT run_id, count(*) AS failed_probes,
           string_agg(coalesce(name, kind, 'probe'), ', ' ORDER BY line) AS names,
           list({'file': source_file, 'line': line, 'raw': coalesce(raw, format('probe {}: ok=false', name))} ORDER BY line) AS ev
    FROM probes
    WHERE ok = false
    GROUP BY run_id
)
SELECT w.run_id,
       w.warnings,
       coalesce(p.failed_probes, 0) AS failed_probes,
       CASE WHEN p.run_id IS NULL THEN 'warning' ELSE 'error' END AS severity,
       format('FP8 scales are uncalibrated ({} warning(s)){}', w.warnings,
              CASE WHEN p.run_id IS NULL THEN ''
                   ELSE format(' and {} quality probe(s) failed: {}', p.failed_probes, p.names) END) AS message,
       list_concat([{'file': w.file, 'line': w.line, 'raw': w.raw}], coalesce(p.ev, [])) AS evidence
FROM w
LEFT JOIN p ON p.run_id = w.run_id
WHERE w.rn = 1
ORDER BY w.run_id;
