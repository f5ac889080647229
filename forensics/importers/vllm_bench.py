"""`vllm bench serve` / legacy `benchmark_serving.py` result JSON (one or several objects per file).

Summary values are milliseconds (`*_ms`); the `--save-detailed` per-request arrays are seconds
and become millisecond columns in `requests`. `date` is local time taken after the run.
The serving-stats helpers here are shared with the SGLang importer (same array shape).
"""
from __future__ import annotations

import re
from statistics import fmean
from typing import Any

from .base import (NOTE_LOCAL_AS_UTC, NOTE_NO_TIME, ImportResult, Picker, extra_json, make_row,
                   naive_to_epoch, request_rate, scaled, to_float, to_int)
from .jsonstream import JsonRecord, read_each

TOOL = "vllm_bench"
NAME_HINTS = re.compile(r"qps|vllm|bench", re.I)
_DATE = re.compile(rb'"date"\s*:\s*"\d{8}-\d{6}"')
_STAT = re.compile(rb'"(mean|median|p\d+(\.\d+)?)_(ttft|tpot|itl|e2el)_ms"')
ARRAY_KEYS = ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times",
              "queue_times", "generated_texts", "errors")


def sniff(head: bytes, name: str) -> bool:
    """A JSON object with a `YYYYMMDD-HHMMSS` date or `model_id`, and vLLM serving stats."""
    if b"total_output_tokens_retokenized" in head or b"_e2e_latency_ms" in head:
        return False  # SGLang bench_serving
    return bool((_DATE.search(head) or b'"model_id"' in head)
                and (_STAT.search(head) or b'"completed"' in head))


def serving_stats(p: Picker, e2e_names: tuple[str, ...]) -> dict[str, Any]:
    """mean/median/p99 TTFT, TPOT, ITL and E2E (ms) plus throughputs and token totals."""
    out: dict[str, Any] = {}
    names = {"ttft": ("ttft",), "tpot": ("tpot",), "itl": ("itl",), "e2e": e2e_names}
    for col, aliases in names.items():
        for stat in ("mean", "median", "p99"):
            out[f"{stat}_{col}_ms"] = to_float(p.get(*(f"{stat}_{a}_ms" for a in aliases)))
    out.update(
        completed=to_int(p.get("completed")),
        total_input_tokens=to_int(p.get("total_input_tokens")),
        total_output_tokens=to_int(p.get("total_output_tokens")),
        duration_s=to_float(p.get("duration")),
        max_concurrency=to_int(p.get("max_concurrency")),
        request_throughput=to_float(p.get("request_throughput")),
        output_throughput=to_float(p.get("output_throughput")),
        total_token_throughput=to_float(p.get("total_token_throughput", "total_throughput")),
        random_input_len=to_int(p.get("random_input_len")),
        random_output_len=to_int(p.get("random_output_len")),
    )
    rate, inf, raw = request_rate(p.get("request_rate"))
    out.update(request_rate=rate, request_rate_inf=inf, request_rate_raw=raw)
    return out


def request_rows(res: ImportResult, rec: JsonRecord, p: Picker) -> int | None:
    """Per-request rows from the detailed arrays (seconds -> ms); returns the error count or None."""
    point = len(res.bench_points)  # the index the caller's add_point will give
    arrays = {k: p.obj[k] for k in ARRAY_KEYS if isinstance(p.obj.get(k), list)}
    if not arrays:
        return None
    p.used.update(arrays)
    lengths = {len(v) for v in arrays.values()}
    if len(lengths) > 1:
        res.add_problem(rec.line, f"record {rec.index}: per-request arrays differ in length "
                        f"{sorted(lengths)}", rec.index)
    errors = arrays.get("errors")
    failed = 0
    for i in range(max(lengths)):
        def at(key: str) -> Any:
            arr = arrays.get(key)
            return arr[i] if arr is not None and i < len(arr) else None
        itl = at("itls")
        gaps = [g for g in (to_float(x) for x in itl) if g is not None] if isinstance(itl, list) else []
        err = at("errors")
        err_text = err if isinstance(err, str) and err else None
        success = None if errors is None else err_text is None
        failed += success is False
        text = at("generated_texts")
        res.requests.append(make_row(
            "requests", source_file=res.source, line=rec.line, tool=res.tool,
            point_index=point, request_index=i,
            input_tokens=to_int(at("input_lens")), output_tokens=to_int(at("output_lens")),
            ttft_ms=scaled(at("ttfts"), 1000.0), e2e_ms=scaled(at("latencies"), 1000.0),
            itl_mean_ms=fmean(gaps) * 1000.0 if gaps else None,
            itl_count=len(itl) if isinstance(itl, list) else None,
            start_s=to_float(at("start_times")), queue_ms=scaled(at("queue_times"), 1000.0),
            error=err_text, success=success,
            output_chars=len(text) if isinstance(text, str) else None,
        ))
    return failed if errors is not None else None


def _point(res: ImportResult, rec: JsonRecord) -> None:
    obj = rec.value
    p = Picker(obj)
    stats = serving_stats(p, ("e2el",))
    date = p.get("date")
    ts = naive_to_epoch(date, ("%Y%m%d-%H%M%S",)) if isinstance(date, str) else None
    failed_from_arrays = request_rows(res, rec, p)
    failed = to_int(p.get("failed"))
    res.add_point(
        record_index=rec.index, line=rec.line, tool=TOOL,
        backend=p.get("backend"), model=p.get("model_id"),
        date_raw=date, ts_end_utc=ts, time_note=NOTE_LOCAL_AS_UTC if ts is not None else NOTE_NO_TIME,
        num_prompts=to_int(p.get("num_prompts")),
        failed=failed if failed is not None else failed_from_arrays,
        extra=extra_json(p.extra()), **stats,
    )


def read(data: bytes, source: str) -> ImportResult:
    return read_each(TOOL, data, source, _point, objects_only=True)
