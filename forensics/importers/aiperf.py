"""AIPerf and GenAI-Perf exports: per-request `profile_export.jsonl` and the summary JSON.

Every AIPerf value carries its `unit`, which decides the ms conversion. Per-request times are
epoch nanoseconds (exact UTC). The summary's `start_time`/`end_time` are naive local ISO times.
`profile_export_genai_perf.json` has the same metric shape and is labelled `genai_perf`.
"""
from __future__ import annotations

import re
from typing import Any

from .base import (NOTE_NO_TIME, ImportResult, Picker, extra_json, iso_to_epoch, make_row,
                   to_float, to_int)
from .jsonstream import JsonRecord, read_values

TOOL = "aiperf"
NAME_HINTS = re.compile(r"profile_export|aiperf|genai_perf", re.I)
_TO_MS = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "us": 1e-3, "ns": 1e-6}


def sniff(head: bytes, name: str) -> bool:
    """Per-request lines (`metadata.request_start_ns` + `metrics`) or a summary with `input_config`."""
    if b'"request_start_ns"' in head and b'"metrics"' in head:
        return True
    return b'"input_config"' in head and b'"unit"' in head and b'"avg"' in head


def _ms(m: Any, key: str = "value") -> float | None:
    if not isinstance(m, dict):
        return None
    factor = _TO_MS.get(str(m.get("unit", "ms")).lower())
    v = to_float(m.get(key))
    return None if v is None or factor is None else v * factor


def _request(res: ImportResult, rec: JsonRecord, obj: dict[str, Any]) -> None:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    mp = Picker(obj.get("metrics") if isinstance(obj.get("metrics"), dict) else {})
    err = obj.get("error") if isinstance(obj.get("error"), dict) else None
    icl = mp.get("inter_chunk_latency")
    icl_values = icl.get("value") if isinstance(icl, dict) else None

    def value(*keys: str) -> Any:
        m = mp.get(*keys)
        return m.get("value") if isinstance(m, dict) else None

    start_ns = to_float(meta.get("request_start_ns"))
    res.requests.append(make_row(
        "requests", source_file=res.source, line=rec.line, tool=res.tool, point_index=None,
        request_index=rec.index, input_tokens=to_int(value("input_sequence_length", "error_isl")),
        output_tokens=to_int(value("output_sequence_length")),
        ttft_ms=_ms(mp.get("time_to_first_token")), e2e_ms=_ms(mp.get("request_latency")),
        itl_mean_ms=_ms(mp.get("inter_token_latency")),
        itl_count=len(icl_values) if isinstance(icl_values, list) else None,
        ts_start_utc=None if start_ns is None else start_ns / 1e9,
        error=(err.get("message") or err.get("type")) if err else None,
        error_code=to_int(err.get("code")) if err else None, success=err is None,
        extra=extra_json({"metadata": meta, "metrics": mp.extra(), "error": err}),
    ))


def _summary(res: ImportResult, rec: JsonRecord, obj: dict[str, Any]) -> None:
    p = Picker(obj)
    stats: dict[str, Any] = {}
    for col, name in (("ttft", "time_to_first_token"), ("itl", "inter_token_latency"), ("e2e", "request_latency")):
        m = p.get(name)
        for stat, key in (("mean", "avg"), ("median", "p50"), ("p99", "p99")):
            stats[f"{stat}_{col}_ms"] = _ms(m, key)

    def avg(key: str) -> float | None:
        m = p.get(key)
        return to_float(m.get("avg")) if isinstance(m, dict) else to_float(m)

    cfg = obj.get("input_config") if isinstance(obj.get("input_config"), dict) else {}
    load = cfg.get("loadgen") if isinstance(cfg.get("loadgen"), dict) else cfg
    endpoint = cfg.get("endpoint") if isinstance(cfg.get("endpoint"), dict) else cfg
    models = endpoint.get("model_names") or cfg.get("model_names") or []
    dur = p.get("benchmark_duration")
    end_raw = p.get("end_time")
    ts, note = iso_to_epoch(end_raw)
    rate = to_float(load.get("request_rate"))
    res.add_point(
        record_index=rec.index, line=rec.line, tool=res.tool,
        backend=endpoint.get("type") or cfg.get("endpoint_type"),
        model=models[0] if isinstance(models, list) and models else None,
        date_raw=end_raw, ts_end_utc=ts, time_note=note if end_raw else NOTE_NO_TIME,
        max_concurrency=to_int(load.get("concurrency")), request_rate=rate,
        request_rate_raw=None if rate is None else str(load.get("request_rate")),
        completed=to_int(avg("request_count")), failed=to_int(avg("error_request_count")),
        total_input_tokens=to_int(avg("total_isl")), total_output_tokens=to_int(avg("total_osl")),
        duration_s=None if _ms(dur, "avg") is None else _ms(dur, "avg") / 1000.0,
        request_throughput=avg("request_throughput"), output_throughput=avg("output_token_throughput"),
        extra=extra_json(p.extra()), **stats,
    )


def _record(res: ImportResult, rec: JsonRecord) -> None:
    obj = rec.value
    if not isinstance(obj, dict):
        res.add_problem(rec.line, f"record {rec.index}: not a JSON object", rec.index)
    elif "metrics" in obj and "metadata" in obj:
        _request(res, rec, obj)
    else:
        _summary(res, rec, obj)


def _tool(records: list[JsonRecord], source: str) -> str:
    first = records[0].value if records and isinstance(records[0].value, dict) else {}
    aiperf_keys = ("error_summary", "was_cancelled", "total_isl", "metadata")
    if any(k in first for k in aiperf_keys) or "loadgen" in (first.get("input_config") or {}):
        return "aiperf"
    return "genai_perf" if "genai_perf" in source.lower() or "input_config" in first else "aiperf"


def read(data: bytes, source: str) -> ImportResult:
    records, problems = read_values(data, source)
    res = ImportResult(_tool(records, source), source)
    res.problems.extend(problems)
    for rec in records:
        res.guard(rec.line, rec.index, lambda rec=rec: _record(res, rec))
    return res
