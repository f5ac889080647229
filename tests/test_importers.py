"""Importers: detection by content, row counts, exact values, ms conversion, extra, bad input."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from forensics import importers
from forensics.importers import (BENCH_COLUMNS, GPU_COLUMNS, PROBE_COLUMNS, REQUEST_COLUMNS,
                                 aiperf, dcgm, detect, guidellm, import_bytes, llmperf, nvidia_smi,
                                 probes, sglang_bench, vllm_bench)

RESULTS = Path(__file__).resolve().parent.parent / "fixtures" / "results"

VLLM = "vllm_benchmark_serving_results_multi_run_concatenated.json"
SGL_ONLINE = "sglang_bench_serving_llama_3_3_70b_online_output.jsonl"
SGL_INF = "sglang_bench_serving_llama_3_3_70b_offline_output_request_rate_Infinity.jsonl"
LP_SUM_OK = "llmperf_summary_anyscale_7b.json"
LP_SUM_429 = "llmperf_summary_lepton_7b_with_429_errors.json"
LP_IND_OK = "llmperf_individual_responses_anyscale_7b.json"
LP_IND_429 = "llmperf_individual_responses_lepton_7b_with_429_errors.json"
SMI_H100 = "nvidia-smi_capture__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
SMI_MIG = "nvidia-smi_capture__linux-x86_64__nvidia-h100-mig__590.48.01.txt"
SMI_CSV = "nvidia-smi_query-gpu_csv_with_units_bpytop_issue26.csv"
DCGM_OLD = "dcgm-exporter_metrics_old_labels_gpu-monitoring-tools_pr197.prom"
DCGM_MIG = "dcgm-exporter_metrics_new_labels_mig_k8s_dcgm-exporter_pr736_partial.prom"
GUIDELLM = "guidellm_benchmarks_v2_synthetic.json"
AIPERF_REQ = "aiperf_profile_export_synthetic.jsonl"
AIPERF_SUM = "aiperf_profile_export_aiperf_synthetic.json"

# file -> (importer, tool, bench_points, requests, gpu_samples)
EXPECTED = {
    VLLM: (vllm_bench, "vllm_bench", 9, 0, 0),
    SGL_ONLINE: (sglang_bench, "sglang_bench", 7, 0, 0),
    SGL_INF: (sglang_bench, "sglang_bench", 7, 0, 0),
    LP_SUM_OK: (llmperf, "llmperf", 1, 0, 0),
    LP_SUM_429: (llmperf, "llmperf", 1, 0, 0),
    LP_IND_OK: (llmperf, "llmperf", 0, 150, 0),
    LP_IND_429: (llmperf, "llmperf", 0, 150, 0),
    SMI_H100: (nvidia_smi, "nvidia_smi", 0, 0, 12),  # 2 query-gpu rows + 2 x 5 dmon rows
    SMI_MIG: (nvidia_smi, "nvidia_smi", 0, 0, 12),
    SMI_CSV: (nvidia_smi, "nvidia_smi", 0, 0, 2),
    DCGM_OLD: (dcgm, "dcgm", 0, 0, 4),
    DCGM_MIG: (dcgm, "dcgm", 0, 0, 4),
    GUIDELLM: (guidellm, "guidellm", 1, 3, 0),
    AIPERF_REQ: (aiperf, "aiperf", 0, 3, 0),
    AIPERF_SUM: (aiperf, "aiperf", 1, 0, 0),
}


def load(name: str):
    data = (RESULTS / name).read_bytes()
    return import_bytes(data, name)


def by_section(rows, section_word, tool):
    return [r for r in rows if r["source_tool"] == tool and section_word in json.loads(r["extra"])["capture_section"]]


# --- every example file ---------------------------------------------------------------------

def test_every_fixture_is_covered():
    files = {p.name for p in RESULTS.iterdir() if p.name != "README.md"}
    assert files == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_detect_counts_and_columns(name):
    imp, tool, n_points, n_requests, n_gpu = EXPECTED[name]
    data = (RESULTS / name).read_bytes()
    assert detect(data[: importers.HEAD_BYTES], name) is imp
    # content decides: a neutral name gives the same answer
    assert detect(data[: importers.HEAD_BYTES], "upload.bin") is imp
    res = imp.read(data, name)
    assert res.tool == tool
    assert (len(res.bench_points), len(res.requests), len(res.gpu_samples)) == (n_points, n_requests, n_gpu)
    assert res.problems == []
    for rows, cols in ((res.bench_points, BENCH_COLUMNS), (res.requests, REQUEST_COLUMNS),
                       (res.gpu_samples, GPU_COLUMNS)):
        assert all(tuple(r) == cols for r in rows)
        assert all(r["source_file"] == name for r in rows)
    for r in res.bench_points:
        assert r["extra"] is None or isinstance(json.loads(r["extra"]), dict)


# --- benchmark results ------------------------------------------------------------------------

def test_vllm_values_metadata_and_time():
    res = load(VLLM)
    p = res.bench_points[0]
    assert (p["record_index"], p["line"], p["point_index"]) == (0, 1, 0)
    assert p["backend"] == "vllm" and p["model"] == "meta-llama/Llama-3.2-3B-Instruct"
    assert p["mean_ttft_ms"] == pytest.approx(54.59561144333596)
    assert p["p99_itl_ms"] == pytest.approx(34.48662216016601)
    assert p["output_throughput"] == pytest.approx(2258.212337970085)
    assert (p["request_rate"], p["request_rate_inf"], p["num_prompts"], p["completed"]) == (10.0, False, 300, 300)
    assert p["failed"] is None  # legacy file: no `failed` key, no per-request errors
    assert p["date_raw"] == "20250530-194738"
    assert p["ts_end_utc"] == 1748634458.0  # 2025-05-30 19:47:38 read as UTC
    assert "as if UTC" in p["time_note"]
    extra = json.loads(p["extra"])
    assert extra["deployment"] == "no-features" and extra["gpu"] == "4xNVIDIA_L40S"
    assert "request_goodput:" in extra  # the legacy typo key is kept, not dropped
    assert "mean_ttft_ms" not in extra and "date" not in extra
    assert [r["line"] for r in res.bench_points] == list(range(1, 10))


def test_vllm_detailed_arrays_seconds_to_ms():
    obj = {"date": "20260101-120000", "backend": "vllm", "model_id": "m", "num_prompts": 3,
           "request_rate": "inf", "completed": 2, "mean_ttft_ms": 100.0, "future_key": [1, 2],
           "input_lens": [10, 11, 12], "output_lens": [5, 0, 3], "ttfts": [0.1, 0.0, 0.25],
           "itls": [[0.01, 0.03], [], [0.02]], "latencies": [0.5, 0.0, 0.75],
           "start_times": [100.0, 100.1, 100.2], "generated_texts": ["hello", "", "abc"],
           "errors": ["", "Bad Gateway", ""]}
    data = json.dumps(obj).encode()
    assert detect(data, "x.json") is vllm_bench
    res = vllm_bench.read(data, "x.json")
    p = res.bench_points[0]
    assert p["request_rate"] is None and p["request_rate_inf"] is True and p["request_rate_raw"] == "inf"
    assert p["failed"] == 1  # derived from `errors`
    assert json.loads(p["extra"]) == {"future_key": [1, 2]}
    r0, r1, r2 = res.requests
    assert r0["ttft_ms"] == pytest.approx(100.0) and r0["e2e_ms"] == pytest.approx(500.0)
    assert r0["itl_mean_ms"] == pytest.approx(20.0) and r0["itl_count"] == 2
    assert r2["ttft_ms"] == pytest.approx(250.0) and r2["itl_mean_ms"] == pytest.approx(20.0)
    assert (r0["input_tokens"], r0["output_tokens"], r0["output_chars"], r0["start_s"]) == (10, 5, 5, 100.0)
    assert r1["success"] is False and r1["error"] == "Bad Gateway" and r1["itl_mean_ms"] is None
    assert r0["success"] is True and r0["error"] is None
    assert {r["point_index"] for r in res.requests} == {0}


def test_sglang_online_and_infinity():
    p = load(SGL_ONLINE).bench_points[0]
    assert (p["backend"], p["model"], p["request_rate"], p["request_rate_inf"]) == ("sglang", None, 1.0, False)
    assert p["median_ttft_ms"] is not None and p["mean_e2e_ms"] is not None
    assert p["random_input_len"] == 1024
    assert "total_output_tokens_retokenized" in json.loads(p["extra"])
    assert p["ts_end_utc"] is None
    q = load(SGL_INF).bench_points[0]
    assert q["request_rate"] is None and q["request_rate_inf"] is True and q["request_rate_raw"] == "Infinity"
    assert q["median_ttft_ms"] == pytest.approx(91282.20983641222)
    assert q["output_throughput"] == pytest.approx(4520.698730654741)
    assert (q["completed"], q["total_output_tokens"], q["random_output_len"]) == (3000, 1544818, 1024)


def test_sglang_server_info_and_details_go_to_extra_and_requests():
    rec = {"backend": "sglang", "request_rate": 8.0, "mean_e2e_latency_ms": 900.0, "completed": 2,
           "server_info": {"model_path": "Qwen/Qwen3-8B", "version": "0.5.0"},
           "input_lens": [4, 5], "output_lens": [2, 0], "ttfts": [0.05, 0.0], "itls": [[0.01], []],
           "generated_texts": ["a", ""], "errors": ["", "timeout"]}
    res = sglang_bench.read((json.dumps(rec) + "\n").encode(), "s.jsonl")
    p = res.bench_points[0]
    assert p["model"] == "Qwen/Qwen3-8B" and p["mean_e2e_ms"] == 900.0 and p["failed"] == 1
    assert json.loads(p["extra"])["server_info"]["version"] == "0.5.0"
    assert res.requests[0]["ttft_ms"] == pytest.approx(50.0) and res.requests[1]["success"] is False


def test_llmperf_summary_and_errors():
    p = load(LP_SUM_429).bench_points[0]
    assert (p["completed"], p["failed"], p["num_prompts"], p["max_concurrency"]) == (20, 130, 150, 5)
    assert p["mean_ttft_ms"] == pytest.approx(1110.7598410000066)
    assert p["p99_e2e_ms"] == pytest.approx(4596.644503030035)
    assert p["output_throughput"] == pytest.approx(55.904209686613335)
    assert p["request_throughput"] == pytest.approx(22.220951183814506 / 60)
    assert p["ts_end_utc"] == 1703638574.0 and p["model"] == "llama2-7b"
    extra = json.loads(p["extra"])
    assert extra["results_error_code_frequency"] == "{429.0: 130}" and extra["framework"] == "lepton"
    reqs = load(LP_IND_429).requests
    failed = [r for r in reqs if not r["success"]]
    assert len(failed) == 130
    assert {r["error_code"] for r in failed} == {429} and failed[0]["error"] == "error_code 429"
    assert all(r["point_index"] is None for r in reqs)


def test_llmperf_individual_seconds_to_ms():
    r = load(LP_IND_OK).requests[0]
    assert r["ttft_ms"] == pytest.approx(428.22809399999073)
    assert r["e2e_ms"] == pytest.approx(2913.9140899999916)
    assert r["itl_mean_ms"] == pytest.approx(18.749778569536718)
    assert (r["input_tokens"], r["output_tokens"], r["success"], r["error"]) == (550, 151, True, None)
    assert "request_output_throughput_token_per_s" in json.loads(r["extra"])


def test_guidellm_synthetic():
    res = load(GUIDELLM)
    p = res.bench_points[0]
    assert (p["model"], p["backend"], p["max_concurrency"]) == ("Qwen/Qwen3-0.6B", "openai_http", 4)
    assert (p["completed"], p["failed"], p["num_prompts"]) == (2, 1, 3)
    assert p["mean_ttft_ms"] == 45.5 and p["p99_ttft_ms"] == 51.0
    assert p["median_e2e_ms"] == pytest.approx(1250.0)  # request_latency is seconds
    assert p["output_throughput"] == 102.8 and p["ts_end_utc"] == 1784016752.5
    assert "some_future_metric" in json.loads(p["extra"])["metrics"]
    ok, ok2, bad = res.requests
    assert ok["ttft_ms"] == 40.0 and ok["e2e_ms"] == pytest.approx(1200.0) and ok["success"] is True
    assert bad["success"] is False and bad["error"] == "HTTP 503 Service Unavailable"
    assert bad["ts_start_utc"] == 1784016750.03


def test_aiperf_requests_units_and_summary():
    a, b, c = load(AIPERF_REQ).requests
    assert a["ttft_ms"] == 255.9 and a["e2e_ms"] == 297.5 and a["itl_count"] == 3
    assert a["ts_start_utc"] == 1784016750.0
    assert b["ttft_ms"] == pytest.approx(241.2) and b["itl_mean_ms"] == pytest.approx(5.0)  # s and ns units
    assert (c["success"], c["error_code"], c["input_tokens"]) == (False, 499, 550)
    assert json.loads(a["extra"])["metadata"]["x_request_id"] == "4f6c1d0e-0001"
    p = load(AIPERF_SUM).bench_points[0]
    assert (p["tool"], p["model"], p["max_concurrency"], p["completed"], p["failed"]) == (
        "aiperf", "Qwen/Qwen3-0.6B", 4, 100, 2)
    assert p["median_ttft_ms"] == 248.8 and p["p99_e2e_ms"] == 398.7 and p["duration_s"] == pytest.approx(13.87)
    assert "error_summary" in json.loads(p["extra"])


def test_genai_perf_summary_labelled():
    obj = {"time_to_first_token": {"unit": "ms", "avg": 12.0, "p50": 11.0, "p99": 20.0},
           "request_throughput": {"unit": "per sec", "avg": 3.0},
           "input_config": {"model_names": ["m"], "concurrency": 2}}
    res = import_bytes(json.dumps(obj).encode(), "artifacts/profile_export_genai_perf.json")
    assert res.tool == "genai_perf"
    p = res.bench_points[0]
    assert (p["mean_ttft_ms"], p["model"], p["max_concurrency"], p["request_throughput"]) == (12.0, "m", 2, 3.0)


# --- GPU telemetry ----------------------------------------------------------------------------

def test_nvidia_smi_capture_query_gpu_and_dmon():
    rows = load(SMI_H100).gpu_samples
    idle = by_section(rows, "idle", "nvidia-smi --query-gpu")[0]
    busy = by_section(rows, "load", "nvidia-smi --query-gpu")[0]
    assert idle["clock_event_reasons"] == 0x1 and idle["reason_gpu_idle"] is True
    assert idle["reason_sw_power_cap"] is False
    assert busy["temperature_c"] == 59 and busy["power_w"] == 631.95 and busy["power_limit_w"] == 700.0
    assert (busy["sm_clock_mhz"], busy["sm_clock_max_mhz"], busy["mem_clock_mhz"]) == (1980, 1980, 2619)
    assert (busy["util_gpu_pct"], busy["mem_used_mib"], busy["mem_total_mib"], busy["pstate"]) == (100.0, 19818, 81559, "P0")
    assert busy["clock_event_reasons"] == 0 and busy["reason_gpu_idle"] is False
    assert busy["ts_raw"] == "2026/07/14 08:12:53.353" and busy["ts_utc"] == pytest.approx(1784016773.353)
    assert "UTC" in busy["time_note"] and busy["line"] == 2105
    extra = json.loads(busy["extra"])
    assert extra["clocks_event_reasons_counters.sw_power_cap [us]"] == "0 us"
    assert extra["temperature.memory"] == "54"
    dmon = by_section(rows, "load", "nvidia-smi dmon")
    assert len(dmon) == 5 and dmon[0]["power_w"] == 631.0 and dmon[0]["temperature_c"] == 63
    assert dmon[0]["ts_utc"] is None and "no timestamp" in dmon[0]["time_note"]


def test_nvidia_smi_mig_not_available_status():
    rows = load(SMI_MIG).gpu_samples
    busy = by_section(rows, "load", "nvidia-smi --query-gpu")[0]
    assert busy["util_gpu_pct"] is None
    assert json.loads(busy["status"]) == {"util_gpu_pct": "[N/A]", "util_mem_pct": "[N/A]"}
    assert busy["power_w"] == 433.78
    dmon = by_section(rows, "load", "nvidia-smi dmon")[0]
    assert dmon["util_gpu_pct"] is None and json.loads(dmon["status"])["util_gpu_pct"] == "-"


def test_nvidia_smi_bpytop_csv_with_units():
    a, b = load(SMI_CSV).gpu_samples
    assert (a["name"], a["temperature_c"], a["power_w"], a["mem_used_mib"], a["util_gpu_pct"]) == (
        "GeForce GTX 1080 Ti", 60, 106.56, 2856, 36.0)
    assert a["sm_clock_mhz"] is None  # graphics clock is not the SM clock: kept in extra
    assert json.loads(a["extra"])["clocks.current.graphics [MHz]"] == "1936 MHz"
    assert b["power_w"] == 5.68 and b["ts_utc"] is None


OLD_CSV = (
    "timestamp, index, temperature.gpu, power.draw [W], clocks_throttle_reasons.gpu_idle, "
    "clocks_throttle_reasons.sw_power_cap, clocks_throttle_reasons.hw_thermal_slowdown, utilization.gpu [%]\n"
    "2024/03/01 10:00:00.100, 0, 81, 698.10 W, Not Active, Active, Active, 99 %\n"
    "2024/03/01 10:00:00.100, 1, 45, [Not Supported], Active, Not Active, Not Active, 0 %\n"
    "timestamp, index, temperature.gpu, power.draw [W], clocks_throttle_reasons.gpu_idle, "
    "clocks_throttle_reasons.sw_power_cap, clocks_throttle_reasons.hw_thermal_slowdown, utilization.gpu [%]\n"
    "2024/03/01 10:00:01.100, 0, 82, 699.00 W, Not Active, Active, Not Active, 98 %\n"
)


def test_nvidia_smi_old_throttle_headers_and_repeated_header():
    data = OLD_CSV.encode()
    assert detect(data, "gpu.csv") is nvidia_smi
    res = nvidia_smi.read(data, "gpu.csv")
    assert len(res.gpu_samples) == 3
    hot, idle, nxt = res.gpu_samples
    assert hot["clock_event_reasons"] == 0x4 | 0x40  # derived from the Active columns
    assert hot["reason_sw_power_cap"] and hot["reason_hw_thermal"] and hot["reason_gpu_idle"] is False
    assert hot["reason_hw_slowdown"] is None  # column absent: unknown, not False
    assert hot["temperature_c"] == 81 and hot["ts_utc"] == pytest.approx(1709287200.1)
    assert idle["power_w"] is None and json.loads(idle["status"]) == {"power_w": "[Not Supported]"}
    assert idle["clock_event_reasons"] == 0x1
    assert nxt["line"] == 5 and nxt["temperature_c"] == 82
    assert [(p["line"], p["message"]) for p in res.problems] == [(4, "repeated header line skipped")]


def test_nvidia_smi_noheader_needs_fields():
    data = b"2024/03/01 10:00:00.100, 0, 0x0000000000000004, 75 C\n"
    assert detect(data, "x.log") is nvidia_smi
    res = nvidia_smi.read(data, "x.log")
    assert res.gpu_samples == [] and res.problems[0]["line"] == 1
    res = nvidia_smi.read(data, "x.log", fields=["timestamp", "index", "clocks_event_reasons.active",
                                                 "temperature.gpu"])
    s = res.gpu_samples[0]
    assert (s["clock_event_reasons"], s["reason_sw_power_cap"], s["temperature_c"]) == (4, True, 75)


def test_dcgm_old_labels():
    rows = load(DCGM_OLD).gpu_samples
    assert [r["gpu_index"] for r in rows] == [0, 1, 2, 3]
    assert rows[0]["temperature_c"] == 49 and rows[0]["power_w"] == pytest.approx(32.227)
    assert rows[3]["power_w"] == pytest.approx(33.124)
    assert json.loads(rows[0]["extra"])["labels"]["Hostname"] == "..."
    assert rows[0]["ts_utc"] is None and rows[0]["line"] == 3


def test_dcgm_new_labels_mig():
    rows = load(DCGM_MIG).gpu_samples
    fb = rows[0]
    assert (fb["gpu_index"], fb["mig_index"], fb["mem_used_mib"], fb["name"]) == (0, 6, 3744, "NVIDIA A30")
    assert json.loads(fb["extra"])["labels"]["pod"] == "triton-server-f7cb5d77-2w5b2"
    ada = rows[1]
    assert (ada["gpu_index"], ada["mig_index"], ada["temperature_c"]) == (1, None, 44)
    assert rows[3]["mig_index"] == 3 and rows[3]["temperature_c"] == 50


def test_dcgm_sentinel_reasons_and_second_scrape():
    text = (
        "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",modelName="H100"} 70\n'
        'DCGM_FI_DEV_MEMORY_TEMP{gpu="0",UUID="GPU-a",modelName="H100"} 9223372036854775794\n'
        'DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="0",UUID="GPU-a",modelName="H100"} 68\n'
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a",modelName="H100"} 9223372036854775794\n'
        "garbage line without value\n"
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a",modelName="H100"} 71\n'
    )
    res = dcgm.read(text.encode(), "m.prom")
    first, second = res.gpu_samples
    assert first["temperature_c"] == 70 and second["temperature_c"] == 71 and second["line"] == 7
    assert first["clock_event_reasons"] == 68 and first["reason_sw_power_cap"] and first["reason_hw_thermal"]
    assert first["power_w"] is None and "power_w" in json.loads(first["status"])
    assert json.loads(first["extra"])["DCGM_FI_DEV_MEMORY_TEMP"] > 1e18  # unmapped metric kept raw
    assert [p["line"] for p in res.problems] == [6]


# --- probes -----------------------------------------------------------------------------------

def test_probes_jsonl_and_gate_lines():
    text = (
        '{"ok": true, "name": "gsm8k", "score": 0.82, "n": 200}\n'
        '{"ok": false, "name": "needle", "score": "n/a"}\n'
        "some chatter\n"
        "GATE gsm8k score= 0.82 PASS\n"
        "GATE mmlu score=0.41 fail\n"
        "GATE humaneval score= 0.5\n"
        '{"ok": true, "name": "cut\n'
    )
    data = text.encode()
    assert detect(data, "quality.jsonl") is probes
    res = probes.read(data, "quality.jsonl")
    assert all(tuple(r) == PROBE_COLUMNS for r in res.probes)
    a, b, g1, g2, g3 = res.probes
    assert (a["name"], a["score"], a["ok"], json.loads(a["extra"])) == ("gsm8k", 0.82, True, {"n": 200})
    assert b["ok"] is False and b["score"] is None and json.loads(b["extra"]) == {"score": "n/a"}
    assert (g1["kind"], g1["name"], g1["score"], g1["ok"], g1["line"]) == ("gate", "gsm8k", 0.82, True, 4)
    assert g2["ok"] is False and g3["ok"] is None
    assert [p["line"] for p in res.problems] == [7]


# --- bad input --------------------------------------------------------------------------------

def test_vllm_cut_mid_object_keeps_earlier_records():
    lines = (RESULTS / VLLM).read_bytes().splitlines(keepends=True)
    data = b"".join(lines[:4]) + lines[4][:200]
    res = vllm_bench.read(data, "cut.json")
    assert len(res.bench_points) == 4
    assert len(res.problems) == 1
    assert res.problems[0]["line"] == 5 and res.problems[0]["record_index"] == 4
    assert "invalid JSON" in res.problems[0]["message"]


def test_jsonl_bad_middle_line_keeps_the_rest():
    lines = (RESULTS / SGL_ONLINE).read_bytes().splitlines(keepends=True)
    data = b"".join(lines[:2]) + lines[2][:60] + b"\n" + b"".join(lines[3:])
    res = sglang_bench.read(data, "bad.jsonl")
    assert len(res.bench_points) == 6
    assert [(p["line"], p["record_index"]) for p in res.problems] == [(3, 2)]
    assert [r["record_index"] for r in res.bench_points] == [0, 1, 3, 4, 5, 6]
    assert [r["point_index"] for r in res.bench_points] == [0, 1, 2, 3, 4, 5]


def test_llmperf_array_cut_keeps_items():
    data = (RESULTS / LP_IND_429).read_bytes()
    cut = data[: len(data) // 2]
    res = llmperf.read(cut, "cut.json")
    assert 60 < len(res.requests) < 80
    assert len(res.problems) == 1 and res.problems[0]["line"] > 100
    assert "array cut" in res.problems[0]["message"]


JUNK = bytes(range(256)) * 8 + b"\x00\xff\xfe{\"not\": json\n\x89PNG\r\n"


@pytest.mark.parametrize("imp", importers.IMPORTERS, ids=lambda m: m.TOOL)
def test_binary_junk_gives_problems_not_exceptions(imp):
    res = imp.read(JUNK, "junk.bin")
    assert res.bench_points == res.requests == res.gpu_samples == res.probes == []
    assert res.problems and all(isinstance(p["line"], int) for p in res.problems)


def test_junk_is_not_detected():
    assert detect(JUNK, "junk.bin") is None
    assert import_bytes(JUNK, "junk.bin") is None


def test_wrong_shapes_become_problems():
    res = vllm_bench.read(b'{"date": "20250101-000000", "model_id": "m", "completed": "x", "ttfts": 5}\n[1, 2]\n',
                          "odd.json")
    assert len(res.bench_points) == 1 and res.bench_points[0]["completed"] is None
    assert [p["line"] for p in res.problems] == [2]


def test_nan_and_infinity_tokens_in_extra_are_strict_json():
    res = vllm_bench.read(b'{"date": "20250101-000000", "model_id": "m", "completed": 1, "odd": NaN, '
                          b'"big": -Infinity}', "nan.json")
    extra = json.loads(res.bench_points[0]["extra"])
    assert extra == {"odd": "NaN", "big": "-Infinity"}
    assert not any(isinstance(v, float) and math.isnan(v) for v in res.bench_points[0].values())


def test_probe_json_responses_are_checked_strictly_never_unfenced() -> None:
    from forensics.importers import probes

    lines = [
        '{"name": "json_mode", "ok": true, "expect": "json", "response": "{\\"city\\": \\"Paris\\"}"}',
        '{"name": "json_mode", "ok": true, "expect": "json", "response": "```json\\n{\\"city\\": \\"Paris\\"}\\n```"}',
        '{"name": "json_mode", "ok": false, "response_format": {"type": "json_object"}, "output": "{\\"city\\": \\"Par"}',
        '{"name": "json_mode", "ok": false, "format": "json", "text": "Sure! Here it is: {}"}',
        '{"name": "gsm8k", "ok": true, "response": "```python\\nprint(1)\\n```"}',
    ]
    res = probes.read("\n".join(lines).encode(), "probes.jsonl")
    assert [r["json_status"] for r in res.probes] == ["ok", "fenced", "unfinished", "invalid", None]
