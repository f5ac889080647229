-- id: load.concurrency_not_reached
-- title: The engine never ran as many requests as the client sent
-- severity: info
-- explanation: The highest running-request count in the engine's periodic stats stayed below the
--   largest concurrency the benchmark asked for (limited by the number of prompts and the
--   engine's running cap). The client, the network or the tokenizer was the bottleneck, or the
--   stats lines missed the peak (they are periodic), so the point measures less load than its
--   label says.
-- remedy: Check the client (enough prompts, no rate limit, a fast enough client host) and compare
--   the point's request throughput with the engine's stats lines.
-- evidence: peak_running, target
WITH pk AS (
    SELECT run_id, value_num AS peak, file, line, raw, row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
    FROM facts WHERE section = 'runtime' AND name = 'peak_running' AND value_num IS NOT NULL
), c AS (
    SELECT run_id, value_num AS cap, row_number() OVER (PARTITION BY run_id ORDER BY line) AS rn
    FROM facts WHERE section = 'effective' AND name = 'max_running_requests' AND value_num > 0
), b AS (
    SELECT bp.run_id, bp.source_file, bp.line, bp.point_index, bp.max_concurrency,
           least(bp.max_concurrency, coalesce(bp.num_prompts, bp.max_concurrency), coalesce(c.cap, bp.max_concurrency)) AS target,
           row_number() OVER (PARTITION BY bp.run_id ORDER BY least(bp.max_concurrency, coalesce(bp.num_prompts, bp.max_concurrency), coalesce(c.cap, bp.max_concurrency)) DESC) AS rn
    FROM bench_points AS bp
    LEFT JOIN c ON c.run_id = bp.run_id AND c.rn = 1
    WHERE bp.max_concurrency > 0
)
SELECT b.run_id,
       pk.peak AS peak_running,
       b.target,
       format('engine ran at most {} requests at once, benchmark asked for {}', pk.peak::BIGINT, b.target::BIGINT) AS message,
       [{'file': pk.file, 'line': pk.line, 'raw': pk.raw},
        {'file': b.source_file, 'line': b.line,
         'raw': format('bench point {}: max_concurrency={}', b.point_index, b.max_concurrency::BIGINT)}] AS evidence
FROM b
JOIN pk ON pk.run_id = b.run_id AND pk.rn = 1
WHERE b.rn = 1 AND pk.peak < b.target
ORDER BY b.run_id;
