"""Ray LLMPerf `token_benchmark_ray.py` output: `*_summary.json` and `*_individual_responses.json`.

Everything is in seconds and becomes milliseconds. The summary's `timestamp` is the file write
time in epoch seconds. LLMPerf's `inter_token_latency_s` is a per-request mean (sum of gaps /
output tokens) and maps to the ITL columns. Individual responses have no timestamps and no
link to a summary row, so their `point_index` is None.
"""
from __future__ import annotations

import re
from typing import Any

from .base import (NOTE_NO_TIME, ImportResult, Picker, extra_json, make_row, scaled, to_float,
                   to_int)
from .jsonstream import JsonRecord, read_each

TOOL = "llmperf"
NAME_HINTS = re.compile(r"summary|individual_responses|llmperf", re.I)


def sniff(head: bytes, name: str) -> bool:
    """Summary: `version` 2023-08-31 or `results_ttft_s_mean`; individual: a list with `ttft_s`."""
    if b'"results_ttft_s_' in head or re.search(rb'"version"\s*:\s*"2023-08-31"', head):
        return True
    return head.lstrip()[:1] == b"[" and b'"ttft_s"' in head and b'"end_to_end_latency_s"' in head


def _summary(res: ImportResult, rec: JsonRecord, obj: dict[str, Any]) -> None:
    p = Picker(obj)
    stats: dict[str, Any] = {}
    for col, metric in (("ttft", "ttft_s"), ("itl", "inter_token_latency_s"),
                        ("e2e", "end_to_end_latency_s")):
        stats[f"mean_{col}_ms"] = scaled(p.get(f"results_{metric}_mean"), 1000.0)
        stats[f"median_{col}_ms"] = scaled(p.get(f"results_{metric}_quantiles_p50"), 1000.0)
        stats[f"p99_{col}_ms"] = scaled(p.get(f"results_{metric}_quantiles_p99"), 1000.0)
    ts = to_float(p.get("timestamp"))
    per_min = to_float(p.get("results_num_completed_requests_per_min"))
    res.add_point(
        record_index=rec.index, line=rec.line, tool=TOOL,
        model=p.get("model"), date_raw=None if ts is None else str(obj.get("timestamp")),
        ts_end_utc=ts,
        time_note="epoch seconds at summary write time" if ts is not None else NOTE_NO_TIME,
        max_concurrency=to_int(p.get("num_concurrent_requests")),
        num_prompts=to_int(p.get("results_num_requests_started")),
        completed=to_int(p.get("results_num_completed_requests")),
        failed=to_int(p.get("results_number_errors")),
        request_throughput=None if per_min is None else per_min / 60.0,
        output_throughput=to_float(p.get("results_mean_output_throughput_token_per_s")),
        random_input_len=to_int(p.get("mean_input_tokens")),
        random_output_len=to_int(p.get("mean_output_tokens")),
        extra=extra_json(p.extra()), **stats,
    )


def _individual(res: ImportResult, rec: JsonRecord, items: list[Any]) -> None:
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            res.add_problem(rec.line, f"response {i}: not an object", rec.index)
            continue
        p = Picker(item)
        code = to_int(p.get("error_code"))
        msg = p.get("error_msg")
        failed = code is not None or bool(msg)
        error = (msg or f"error_code {code}") if failed else None
        res.requests.append(make_row(
            "requests", source_file=res.source, line=rec.line, tool=TOOL, point_index=None,
            request_index=i, input_tokens=to_int(p.get("number_input_tokens")),
            output_tokens=to_int(p.get("number_output_tokens")),
            ttft_ms=scaled(p.get("ttft_s"), 1000.0), e2e_ms=scaled(p.get("end_to_end_latency_s"), 1000.0),
            itl_mean_ms=scaled(p.get("inter_token_latency_s"), 1000.0),
            error=error, error_code=code, success=not failed, extra=extra_json(p.extra()),
        ))


def _record(res: ImportResult, rec: JsonRecord) -> None:
    if isinstance(rec.value, dict):
        _summary(res, rec, rec.value)
    elif isinstance(rec.value, list):
        _individual(res, rec, rec.value)
    else:
        res.add_problem(rec.line, f"record {rec.index}: neither a summary nor a response list", rec.index)


def read(data: bytes, source: str) -> ImportResult:
    return read_each(TOOL, data, source, _record)
