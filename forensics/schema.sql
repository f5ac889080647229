-- The forensics archive: one DuckDB file per campaign (or many campaigns).
-- Every row keeps the file and line (or record index) it came from.
-- Units are in column names: _ms milliseconds, _s seconds, _gib GiB, _mib MiB, _pct percent,
-- _c degrees Celsius, _w watts, _mhz MHz, ts_* UTC epoch seconds.

CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);

CREATE TABLE IF NOT EXISTS runs (
    run_id        VARCHAR PRIMARY KEY,  -- the run folder's name
    campaign      VARCHAR,              -- the folder (or archive) the run was found in
    path          VARCHAR,              -- where it was ingested from
    content_hash  VARCHAR NOT NULL,     -- sha256 over the run's files: re-ingest is a no-op
    engine        VARCHAR,              -- vllm | sglang | NULL
    engine_version VARCHAR,
    model         VARCHAR,
    outcome       VARCHAR,              -- ready | failed_startup | crashed_after_ready | unknown
    ready_line    INTEGER,              -- line of the first ready (or serving) evidence in the log
    log_file      VARCHAR,
    ingested_at   TIMESTAMP,
    time_note     VARCHAR               -- how log times were put on one clock, or why not
);

CREATE TABLE IF NOT EXISTS files (
    run_id VARCHAR, path VARCHAR, kind VARCHAR, tool VARCHAR, sha256 VARCHAR, bytes BIGINT
);

-- requested / effective / runtime / meta facts, one row per fact (lowest rank's value);
-- value_num holds numbers, value_text strings, value_json everything as JSON.
CREATE TABLE IF NOT EXISTS facts (
    run_id VARCHAR, section VARCHAR, name VARCHAR,
    value_num DOUBLE, value_text VARCHAR, value_json VARCHAR, unit VARCHAR, rank VARCHAR,
    file VARCHAR, line INTEGER, raw VARCHAR, pattern VARCHAR
);

-- the runtime time series: one row per periodic stats line (vLLM metrics, SGLang batch line)
CREATE TABLE IF NOT EXISTS runtime (
    run_id VARCHAR, file VARCHAR, line INTEGER, time_raw VARCHAR,
    ts_utc DOUBLE,                        -- time_raw on the UTC epoch clock when it can be done honestly (runs.time_note)
    rank VARCHAR, kind VARCHAR,
    running DOUBLE, waiting DOUBLE, kv_usage_pct DOUBLE, token_usage DOUBLE,
    prompt_throughput DOUBLE, gen_throughput DOUBLE, values_json VARCHAR
);

CREATE TABLE IF NOT EXISTS errors (
    run_id VARCHAR, ordinal INTEGER,      -- 0 = root cause
    type VARCHAR, message VARCHAR, rank VARCHAR, consequence BOOLEAN,
    time_raw VARCHAR, ts_utc DOUBLE,      -- as printed; on the UTC epoch clock when it can be done honestly
    file VARCHAR, line INTEGER, raw VARCHAR
);

-- HTTP 200 responses the log shows after the first fatal error (a dead engine still serving)
CREATE TABLE IF NOT EXISTS http_after_fatal (
    run_id VARCHAR, ok_count BIGINT, file VARCHAR, line INTEGER, raw VARCHAR
);

CREATE TABLE IF NOT EXISTS bench_points (
    run_id VARCHAR, source_file VARCHAR, point_index INTEGER, record_index INTEGER, line INTEGER,
    tool VARCHAR, backend VARCHAR, model VARCHAR, date_raw VARCHAR, ts_end_utc DOUBLE, time_note VARCHAR,
    max_concurrency DOUBLE, request_rate DOUBLE, request_rate_inf BOOLEAN, request_rate_raw VARCHAR,
    num_prompts BIGINT, completed BIGINT, failed BIGINT, total_input_tokens BIGINT, total_output_tokens BIGINT,
    duration_s DOUBLE,
    mean_ttft_ms DOUBLE, median_ttft_ms DOUBLE, p99_ttft_ms DOUBLE,
    mean_tpot_ms DOUBLE, median_tpot_ms DOUBLE, p99_tpot_ms DOUBLE,
    mean_itl_ms DOUBLE, median_itl_ms DOUBLE, p99_itl_ms DOUBLE,
    mean_e2e_ms DOUBLE, median_e2e_ms DOUBLE, p99_e2e_ms DOUBLE,
    request_throughput DOUBLE, output_throughput DOUBLE, total_token_throughput DOUBLE,
    random_input_len DOUBLE, random_output_len DOUBLE, extra VARCHAR
);

CREATE TABLE IF NOT EXISTS requests (
    run_id VARCHAR, source_file VARCHAR, line INTEGER, tool VARCHAR, point_index INTEGER, request_index BIGINT,
    input_tokens BIGINT, output_tokens BIGINT, ttft_ms DOUBLE, e2e_ms DOUBLE, itl_mean_ms DOUBLE, itl_count BIGINT,
    start_s DOUBLE, ts_start_utc DOUBLE, queue_ms DOUBLE, error VARCHAR, error_code VARCHAR, success BOOLEAN,
    finish_reason VARCHAR, output_chars BIGINT, extra VARCHAR
);

CREATE TABLE IF NOT EXISTS gpu_samples (
    run_id VARCHAR, source_file VARCHAR, line INTEGER, source_tool VARCHAR, ts_utc DOUBLE, ts_raw VARCHAR,
    time_note VARCHAR, gpu_index INTEGER, mig_index INTEGER, uuid VARCHAR, name VARCHAR, temperature_c DOUBLE,
    sm_clock_mhz DOUBLE, sm_clock_max_mhz DOUBLE, mem_clock_mhz DOUBLE, mem_clock_max_mhz DOUBLE,
    power_w DOUBLE, power_limit_w DOUBLE, util_gpu_pct DOUBLE, util_mem_pct DOUBLE,
    mem_used_mib DOUBLE, mem_total_mib DOUBLE, pstate VARCHAR, clock_event_reasons BIGINT,
    reason_gpu_idle BOOLEAN, reason_applications_clocks BOOLEAN, reason_sw_power_cap BOOLEAN,
    reason_hw_slowdown BOOLEAN, reason_sync_boost BOOLEAN, reason_sw_thermal BOOLEAN,
    reason_hw_thermal BOOLEAN, reason_hw_power_brake BOOLEAN, reason_display_clocks BOOLEAN,
    status VARCHAR, extra VARCHAR
);

CREATE TABLE IF NOT EXISTS probes (
    run_id VARCHAR, source_file VARCHAR, line INTEGER, record_index INTEGER, kind VARCHAR,
    name VARCHAR, score DOUBLE, ok BOOLEAN, raw VARCHAR, extra VARCHAR,
    json_status VARCHAR                   -- a probe expecting JSON: ok | fenced | unfinished | invalid (strict whole-text parse)
);

-- malformed records met during ingest: reported, never fatal
CREATE TABLE IF NOT EXISTS problems (
    run_id VARCHAR, file VARCHAR, line INTEGER, record_index INTEGER, message VARCHAR, raw VARCHAR
);

CREATE TABLE IF NOT EXISTS findings (
    run_id VARCHAR, rule VARCHAR, severity VARCHAR, title VARCHAR, message VARCHAR,
    evidence_json VARCHAR, rule_file VARCHAR, checked_at TIMESTAMP
);

-- thresholds the rules read; change with UPDATE, or per check with `forensics check --set`
CREATE TABLE IF NOT EXISTS rule_settings (key VARCHAR PRIMARY KEY, value DOUBLE, doc VARCHAR);
INSERT OR IGNORE INTO rule_settings VALUES
    ('prefix_cache_ceiling_tps', 60000, 'implied prefill rate (input tokens / TTFT) above which a request is a cache hit'),
    ('prefix_cache_cold_ratio', 5, 'a request this many times faster than the cold prefill rate of similar prompts is a cache hit'),
    ('truncated_fraction', 0.5, 'a successful response with fewer than this fraction of the requested output tokens is truncated'),
    ('gpu_hot_c', 85, 'GPU temperature (C) reported alongside throttling');
