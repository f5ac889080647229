-- id: quality.json_not_strict
-- title: A response that should be JSON is fenced in Markdown, cut off or not JSON
-- severity: warning
-- explanation: A quality probe expected JSON and the whole response did not parse as JSON: it
--   came wrapped in a Markdown code fence, stopped mid-value (max_tokens, a dead stream) or is
--   not JSON at all. Clients that parse strictly fail on it; a harness that strips fences before
--   parsing hides the problem, so the check is made on the raw text, never a cleaned copy.
--   Severity error when the probe itself reported ok: its pass is not to be trusted.
-- remedy: Use the engine's structured output (response_format / guided decoding) or a stricter
--   prompt; raise max_tokens for unfinished responses; make the probe parse strictly.
-- evidence: probe, json_status, probe_ok
SELECT run_id,
       name AS probe,
       json_status,
       ok AS probe_ok,
       CASE WHEN ok THEN 'error' ELSE 'warning' END AS severity,
       format('probe {} expected JSON but the response is {}{}', coalesce(name, '?'),
              CASE json_status WHEN 'fenced' THEN 'fenced in Markdown'
                               WHEN 'unfinished' THEN 'cut off mid-value' ELSE 'not JSON' END,
              CASE WHEN ok THEN ' (the probe counted it as a pass)' ELSE '' END) AS message,
       [{'file': source_file, 'line': line, 'raw': coalesce(raw, format('probe {}', name))}] AS evidence
FROM probes
WHERE json_status IN ('fenced', 'unfinished', 'invalid')
ORDER BY run_id, source_file, line;
