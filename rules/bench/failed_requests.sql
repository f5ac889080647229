-- id: bench.failed_requests
-- title: Benchmark requests failed
-- severity: error
-- explanation: The benchmark client reports failed requests. Throughput and latency of those
--   points are computed over the requests that succeeded, so they overstate the engine, and the
--   failures often point at a crash, a timeout or a context-length rejection.
-- remedy: Find the cause in the server log around the point (`forensics scan LOG`), fix it, and
--   rerun the points with failures.
-- evidence: failed, requests, points
SELECT run_id,
       sum(failed) AS failed,
       sum(coalesce(completed, 0) + coalesce(failed, 0)) AS requests,
       count(*) FILTER (WHERE failed > 0) AS points,
       format('{} of {} benchmark request(s) failed in {} point(s) (worst: point {} at concurrency {}: {} failed)',
              sum(failed), sum(coalesce(completed, 0) + coalesce(failed, 0)), count(*) FILTER (WHERE failed > 0),
              arg_max(point_index, failed), coalesce(arg_max(max_concurrency, failed)::BIGINT::VARCHAR, 'unknown'),
              max(failed)) AS message,
       list({'file': source_file, 'line': line,
             'raw': format('bench point {}: completed={}, failed={}', point_index, completed, failed)}
            ORDER BY failed DESC, point_index) FILTER (WHERE failed > 0) AS evidence
FROM bench_points
GROUP BY run_id
HAVING sum(failed) > 0
ORDER BY run_id;
