-- id: load.concurrency_over_slots
-- title: Benchmark concurrency exceeds the engine's running-request cap
-- severity: warning
-- explanation: A benchmark point sent more concurrent requests than the engine may run at once
--   (its effective max running requests). The excess requests queue inside the server, so TTFT
--   and E2E latency at that point include queueing time and throughput is capped by the engine.
-- remedy: Compare points only up to the cap, or raise the cap (--max-num-seqs /
--   --max-running-requests) with enough KV cache to hold it.
-- evidence: max_concurrency, cap, points_over
WITH cap AS (
    SELECT run_id, value_num AS cap, file, line, raw,
           row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
    FROM facts
    WHERE section = 'effective' AND name = 'max_running_requests' AND value_num IS NOT NULL
), over AS (
    SELECT b.run_id, b.max_concurrency, c.cap, c.file AS cap_file, c.line AS cap_line, c.raw AS cap_raw,
           {'file': b.source_file, 'line': b.line,
            'raw': format('bench point {}: max_concurrency={}', b.point_index, b.max_concurrency::BIGINT)} AS ev
    FROM bench_points AS b
    JOIN cap AS c ON c.run_id = b.run_id AND c.rn = 1
    WHERE b.max_concurrency > c.cap
)
SELECT run_id,
       max(max_concurrency) AS max_concurrency,
       any_value(cap) AS cap,
       count(*) AS points_over,
       format('benchmark ran up to {} concurrent requests, engine runs at most {} ({} point(s) above the cap)',
              max(max_concurrency)::BIGINT, any_value(cap)::BIGINT, count(*)) AS message,
       list_concat([{'file': any_value(cap_file), 'line': any_value(cap_line), 'raw': any_value(cap_raw)}],
                   list(ev ORDER BY max_concurrency DESC)) AS evidence
FROM over
GROUP BY run_id
ORDER BY run_id;
