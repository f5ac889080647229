"""GuideLLM report JSON (`benchmarks.json`): v0.3 (bare), v1 (`metadata`+`args`), v2 (`config`).

One bench point per `generative_benchmark`; statistics come from the `successful` distribution
of each metric (`*_ms` already in ms, `request_latency` in s). Times are epoch seconds, so the
UTC conversion is exact. Sampled requests (`requests.successful|incomplete|errored`) become rows.
"""
from __future__ import annotations

import re
from typing import Any

from .base import (NOTE_EPOCH, NOTE_NO_TIME, ImportResult, Picker, extra_json, make_row, scaled,
                   to_float, to_int)
from .jsonstream import JsonRecord, read_each

TOOL = "guidellm"
NAME_HINTS = re.compile(r"benchmarks|guidellm", re.I)


def sniff(head: bytes, name: str) -> bool:
    """A report object with a `benchmarks` list of `generative_benchmark` items (or guidellm_version)."""
    return b'"benchmarks"' in head and (b"generative_benchmark" in head or b'"guidellm_version"' in head)


def _dist(metrics: dict[str, Any], name: str) -> dict[str, Any]:
    d = metrics.get(name)
    d = d.get("successful") if isinstance(d, dict) and "successful" in d else d
    return d if isinstance(d, dict) else {}


def _stats(metrics: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for col, name, factor in (("ttft", "time_to_first_token_ms", 1.0), ("tpot", "time_per_output_token_ms", 1.0),
                              ("itl", "inter_token_latency_ms", 1.0), ("e2e", "request_latency", 1000.0)):
        d = _dist(metrics, name)
        pct = d.get("percentiles") if isinstance(d.get("percentiles"), dict) else {}
        out[f"mean_{col}_ms"] = scaled(d.get("mean"), factor)
        out[f"median_{col}_ms"] = scaled(d.get("median"), factor)
        out[f"p99_{col}_ms"] = scaled(pct.get("p99"), factor)
    out["request_throughput"] = to_float(_dist(metrics, "requests_per_second").get("mean"))
    out["output_throughput"] = to_float(_dist(metrics, "output_tokens_per_second").get("mean"))
    out["total_token_throughput"] = to_float(_dist(metrics, "tokens_per_second").get("mean"))
    out["total_input_tokens"] = to_int(_dist(metrics, "prompt_token_count").get("total_sum"))
    out["total_output_tokens"] = to_int(_dist(metrics, "output_token_count").get("total_sum"))
    return out


def _load(strategy: Any) -> dict[str, Any]:
    """max_concurrency / request_rate from the scheduling strategy."""
    s = strategy if isinstance(strategy, dict) else {}
    kind = s.get("type_")
    out: dict[str, Any] = {"max_concurrency": to_int(s.get("streams", s.get("max_concurrency")))}
    if kind == "synchronous":
        out["max_concurrency"] = 1
    if kind == "throughput":
        out["request_rate_inf"], out["request_rate_raw"] = True, "throughput"
    elif s.get("rate") is not None:
        out["request_rate"], out["request_rate_raw"] = to_float(s["rate"]), str(s["rate"])
    return out


def _find(*candidates: Any) -> Any:
    return next((c for c in candidates if c), None)


def _requests(res: ImportResult, rec: JsonRecord, point: int, reqs: Any) -> None:
    if not isinstance(reqs, dict):
        return
    n = 0
    for status in ("successful", "incomplete", "errored"):
        for item in reqs.get(status) or []:
            if not isinstance(item, dict):
                continue
            p = Picker(item)
            info = item.get("info") if isinstance(item.get("info"), dict) else {}
            timings = info.get("timings") if isinstance(info.get("timings"), dict) else {}
            start = to_float(_find(timings.get("request_start"), p.get("request_start_time"), p.get("start_time")))
            end = to_float(_find(timings.get("request_end"), p.get("request_end_time"), p.get("end_time")))
            first = to_float(p.get("first_token_time"))
            ttft = to_float(p.get("time_to_first_token_ms"))
            if ttft is None and first is not None and start is not None:
                ttft = (first - start) * 1000.0
            e2e = scaled(p.get("request_latency"), 1000.0)
            if e2e is None and start is not None and end is not None:
                e2e = (end - start) * 1000.0
            out = p.get("output")
            p.get("info")
            res.requests.append(make_row(
                "requests", source_file=res.source, line=rec.line, tool=TOOL, point_index=point,
                request_index=n, input_tokens=to_int(p.get("prompt_tokens")),
                output_tokens=to_int(p.get("output_tokens")), ttft_ms=ttft, e2e_ms=e2e,
                itl_mean_ms=to_float(p.get("inter_token_latency_ms")), ts_start_utc=start,
                error=_find(info.get("error"), p.get("error")), success=status == "successful",
                output_chars=len(out) if isinstance(out, str) else None,
                extra=extra_json({"status": status, "request_id": _find(item.get("request_id"), info.get("request_id"))}),
            ))
            n += 1


def _record(res: ImportResult, rec: JsonRecord) -> None:
    report = rec.value
    if not isinstance(report, dict) or not isinstance(report.get("benchmarks"), list):
        res.add_problem(rec.line, f"record {rec.index}: no `benchmarks` list", rec.index)
        return
    run_cfg = report.get("config") or report.get("args") or {}
    envelope = {k: v for k, v in report.items() if k != "benchmarks"}
    for i, bench in enumerate(report["benchmarks"]):
        if not isinstance(bench, dict):
            res.add_problem(rec.line, f"benchmark {i}: not an object", rec.index)
            continue
        p = Picker(bench)
        cfg = p.get("config", "args") or {}
        backend = cfg.get("backend") if isinstance(cfg.get("backend"), dict) else {}
        metrics = bench.get("metrics") or {}
        totals = metrics.get("request_totals") if isinstance(metrics.get("request_totals"), dict) else {}
        end = to_float(p.get("end_time"))
        start = to_float(p.get("start_time"))
        p.get("requests", "type_")
        extra = {**p.extra(), "config": cfg, "metrics": metrics, "report": envelope}
        point = res.add_point(
            record_index=rec.index, line=rec.line, tool=TOOL,
            backend=_find(backend.get("type_"), run_cfg.get("backend_type") if isinstance(run_cfg, dict) else None),
            model=_find(cfg.get("model"), backend.get("model"),
                        run_cfg.get("model") if isinstance(run_cfg, dict) else None),
            date_raw=None if end is None else repr(end), ts_end_utc=end,
            time_note=NOTE_EPOCH + " (measure window end)" if end is not None else NOTE_NO_TIME,
            num_prompts=to_int(totals.get("total")), completed=to_int(totals.get("successful")),
            failed=to_int(totals.get("errored")),
            duration_s=to_float(bench.get("duration")) or (end - start if end and start else None),
            extra=extra_json(extra), **_load(cfg.get("strategy")), **_stats(metrics),
        )
        _requests(res, rec, point, bench.get("requests"))


def read(data: bytes, source: str) -> ImportResult:
    return read_each(TOOL, data, source, _record)
