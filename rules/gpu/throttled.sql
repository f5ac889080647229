-- id: gpu.throttled
-- title: GPUs throttled their clocks during the benchmark
-- severity: warning
-- explanation: NVML clock-event reasons show hardware slowdown, thermal slowdown, a power brake
--   or the software power cap while a benchmark point ran (the window [ts_end_utc - duration_s,
--   ts_end_utc] of each point). The GPU ran below its clocks, so the point measures the cooling
--   or power budget as much as the engine. Without a known window all samples of the run count,
--   and the message says so.
-- remedy: Check cooling, power limits (`nvidia-smi -q -d PERFORMANCE,POWER`) and neighbours on the
--   node; rerun the affected points on healthy GPUs.
-- evidence: throttled_samples, samples, reasons, max_temperature_c
WITH hot AS (
    SELECT value AS hot_c FROM rule_settings WHERE key = 'gpu_hot_c'
), win AS (
    SELECT run_id, point_index, source_file, line, ts_end_utc - duration_s AS t0, ts_end_utc AS t1
    FROM bench_points
    WHERE ts_end_utc IS NOT NULL AND duration_s > 0
), runs_with_win AS (
    SELECT DISTINCT run_id FROM win
), s AS (
    -- only the columns used: gpu_samples rows are many (5M in a 1,000-run campaign)
    SELECT g.run_id, g.source_file, g.line, g.gpu_index, g.ts_utc, g.temperature_c, g.sm_clock_mhz,
           g.reason_hw_slowdown, g.reason_sw_thermal, g.reason_hw_thermal, g.reason_hw_power_brake,
           g.reason_sw_power_cap,
           w.point_index, w.source_file AS b_file, w.line AS b_line, w.run_id IS NOT NULL AS windowed
    FROM gpu_samples AS g
    LEFT JOIN win AS w ON w.run_id = g.run_id AND g.ts_utc BETWEEN w.t0 AND w.t1
    WHERE w.run_id IS NOT NULL OR g.run_id NOT IN (SELECT run_id FROM runs_with_win)
), tot AS (
    SELECT run_id, count(*) AS samples, bool_or(windowed) AS windowed FROM s GROUP BY run_id
), t AS (
    SELECT s.*,
           -- list_distinct drops the NULLs (no lambdas: they changed syntax across DuckDB versions)
           list_sort(list_distinct([CASE WHEN reason_hw_slowdown THEN 'hw_slowdown' END,
                                    CASE WHEN reason_sw_thermal THEN 'sw_thermal' END,
                                    CASE WHEN reason_hw_thermal THEN 'hw_thermal' END,
                                    CASE WHEN reason_hw_power_brake THEN 'hw_power_brake' END,
                                    CASE WHEN reason_sw_power_cap THEN 'sw_power_cap' END])) AS why
    FROM s
    WHERE coalesce(reason_hw_slowdown OR reason_sw_thermal OR reason_hw_thermal OR reason_hw_power_brake
                   OR reason_sw_power_cap, false)
), agg AS (
    SELECT t.run_id,
           count(*) AS throttled_samples,
           any_value(tot.samples) AS samples,
           list_sort(list_distinct(flatten(list(why)))) AS reasons,
           max(temperature_c) AS max_temperature_c,
           list_sort(list_distinct(list(gpu_index))) AS gpus,
           any_value(tot.windowed) AS windowed,
           (list({'file': source_file, 'line': line,
                  'raw': format('gpu {} at {}: {} (temp {} C, sm clock {} MHz)', gpu_index, ts_utc,
                                array_to_string(why, ','), temperature_c, sm_clock_mhz)}
                 ORDER BY ts_utc, gpu_index))[1:3] AS sample_ev,
           list_distinct(list({'file': b_file, 'line': b_line, 'raw': format('bench point {} window', point_index)})
                         FILTER (WHERE b_file IS NOT NULL)) AS point_ev
    FROM t JOIN tot USING (run_id)
    GROUP BY t.run_id
)
SELECT a.run_id,
       a.throttled_samples,
       a.samples,
       array_to_string(a.reasons, ', ') AS reasons,
       a.max_temperature_c,
       format('GPU {} throttled in {} of {} samples {}: {}{}',
              array_to_string(a.gpus, ','), a.throttled_samples, a.samples,
              CASE WHEN a.windowed THEN 'during benchmark points'
                   ELSE '(no benchmark window known: all samples of the run)' END,
              array_to_string(a.reasons, ', '),
              CASE WHEN a.max_temperature_c >= hot.hot_c THEN format(' (max {} C)', a.max_temperature_c) ELSE '' END) AS message,
       list_concat(a.point_ev, a.sample_ev) AS evidence
FROM agg AS a, hot
WHERE a.throttled_samples > 0
ORDER BY a.run_id;
