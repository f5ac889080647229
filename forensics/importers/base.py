"""Shared pieces of the importers: ImportResult, the row columns of each table, problems, coercion."""
from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable

# Column sets. Every row an importer yields has exactly these keys (missing values are None),
# so the archive can create its tables from these tuples.
BENCH_COLUMNS = (
    "source_file", "point_index", "record_index", "line", "tool", "backend", "model",
    "date_raw", "ts_end_utc", "time_note",
    "max_concurrency", "request_rate", "request_rate_inf", "request_rate_raw",
    "num_prompts", "completed", "failed", "total_input_tokens", "total_output_tokens", "duration_s",
    "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms",
    "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
    "mean_itl_ms", "median_itl_ms", "p99_itl_ms",
    "mean_e2e_ms", "median_e2e_ms", "p99_e2e_ms",
    "request_throughput", "output_throughput", "total_token_throughput",
    "random_input_len", "random_output_len", "extra",
)
REQUEST_COLUMNS = (
    "source_file", "line", "tool", "point_index", "request_index",
    "input_tokens", "output_tokens", "ttft_ms", "e2e_ms", "itl_mean_ms", "itl_count",
    "start_s", "ts_start_utc", "queue_ms", "error", "error_code", "success", "finish_reason",
    "output_chars", "extra",
)
REASON_BITS = {
    "gpu_idle": 0x1, "applications_clocks": 0x2, "sw_power_cap": 0x4, "hw_slowdown": 0x8,
    "sync_boost": 0x10, "sw_thermal": 0x20, "hw_thermal": 0x40, "hw_power_brake": 0x80,
    "display_clocks": 0x100,
}
GPU_COLUMNS = (
    "source_file", "line", "source_tool", "ts_utc", "ts_raw", "time_note",
    "gpu_index", "mig_index", "uuid", "name", "temperature_c",
    "sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz", "mem_clock_max_mhz",
    "power_w", "power_limit_w", "util_gpu_pct", "util_mem_pct", "mem_used_mib", "mem_total_mib",
    "pstate", "clock_event_reasons", *(f"reason_{n}" for n in REASON_BITS), "status", "extra",
)
PROBE_COLUMNS = ("source_file", "line", "record_index", "kind", "name", "score", "ok", "raw", "extra", "json_status")

TABLE_COLUMNS = {
    "bench_points": BENCH_COLUMNS, "requests": REQUEST_COLUMNS,
    "gpu_samples": GPU_COLUMNS, "probes": PROBE_COLUMNS,
}
PROBLEM_KEYS = ("file", "line", "record_index", "message", "raw")

# Wording of the time assumptions, one place so the archive and docs can quote them.
NOTE_LOCAL_AS_UTC = "local wall clock without zone; converted as if UTC (shift by the host's offset)"
NOTE_EPOCH = "epoch seconds as written"
NOTE_NO_TIME = "no time in the record"


@dataclass
class ImportResult:
    """Rows read from one file, per table, plus the problems met on the way."""

    tool: str
    source: str
    bench_points: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    gpu_samples: list[dict[str, Any]] = field(default_factory=list)
    probes: list[dict[str, Any]] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {t: len(getattr(self, t)) for t in (*TABLE_COLUMNS, "problems")}

    def add_point(self, **values: Any) -> int:
        """Append a bench_points row; `point_index` is its 0-based position in this file."""
        index = len(self.bench_points)
        self.bench_points.append(make_row("bench_points", source_file=self.source, point_index=index, **values))
        return index

    def add_problem(self, line: int | None, message: str, record_index: int | None = None,
                    raw: str | None = None) -> None:
        self.problems.append(problem(self.source, line, message, record_index, raw))

    def guard(self, line: int | None, record_index: int | None, fn: Callable[[], None]) -> None:
        """Run one record's conversion; an unexpected shape becomes a problem, never an exception."""
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - bad content must not abort the file
            self.add_problem(line, f"cannot read record: {type(exc).__name__}: {exc}", record_index)


def problem(source: str, line: int | None, message: str, record_index: int | None = None,
            raw: str | None = None) -> dict[str, Any]:
    return {"file": source, "line": line, "record_index": record_index, "message": message,
            "raw": raw[:200] if raw else None}


def make_row(table: str, **values: Any) -> dict[str, Any]:
    """A row with every column of `table`; an unknown key is a programming error."""
    cols = TABLE_COLUMNS[table]
    unknown = set(values) - set(cols)
    if unknown:
        raise KeyError(f"{table}: unknown columns {sorted(unknown)}")
    return {c: values.get(c) for c in cols}


class Picker:
    """Reads keys from a dict and remembers which were used, so the rest can go to `extra`."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj, self.used = obj, set()

    def get(self, *keys: str) -> Any:
        """The first of `keys` present with a non-None value; every present key counts as used."""
        found = None
        for k in keys:
            if k in self.obj:
                self.used.add(k)
                if found is None and self.obj[k] is not None:
                    found = self.obj[k]
        return found

    def extra(self) -> dict[str, Any]:
        return {k: v for k, v in self.obj.items() if k not in self.used}


def to_float(v: Any) -> float | None:
    """A finite float, or None (bools, NaN, infinities, non-numeric strings)."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, str):
        try:
            v = float(v.strip())
        except ValueError:
            return None
    if isinstance(v, (int, float)):
        f = float(v)
        return f if math.isfinite(f) else None
    return None


INT64_MAX = 2**63 - 1


def to_int(v: Any) -> int | None:
    """A whole number that fits the archive's BIGINT columns, or None."""
    f = to_float(v)
    return int(f) if f is not None and f == int(f) and abs(f) < INT64_MAX else None


def scaled(v: Any, factor: float) -> float | None:
    f = to_float(v)
    return None if f is None else f * factor


def request_rate(v: Any) -> tuple[float | None, bool, str | None]:
    """(finite rate or None, is-infinite flag, raw text). Infinity is stored as None + flag True."""
    if v is None:
        return None, False, None
    raw = v if isinstance(v, str) else json.dumps(v, allow_nan=True)
    if isinstance(v, str) and v.strip().lower() in ("inf", "infinity", "+inf"):
        return None, True, raw
    if isinstance(v, float) and math.isinf(v) and v > 0:
        return None, True, raw
    return to_float(v), False, raw


def _sanitize(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if isinstance(v, dict):
        return {str(k): _sanitize(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_sanitize(x) for x in v]
    return v


def extra_json(d: dict[str, Any] | None) -> str | None:
    """Strict JSON text of the unmapped keys (NaN/Infinity become strings), None when empty."""
    if not d:
        return None
    return json.dumps(_sanitize(d), default=str, ensure_ascii=False)


def naive_to_epoch(text: str | None, formats: tuple[str, ...]) -> float | None:
    """Parse a zone-less local time with the first matching format, read as UTC."""
    if not text:
        return None
    text = text.strip()
    try:  # fast path for `2024/01/15 10:23:45.123`-style stamps; strptime is ~40 us a call
        t = dt.datetime.fromisoformat(text.replace("/", "-"))
        return t.replace(tzinfo=dt.timezone.utc).timestamp() if t.tzinfo is None else t.timestamp()
    except ValueError:
        pass
    for fmt in formats:
        try:
            t = dt.datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
        return t.replace(tzinfo=dt.timezone.utc).timestamp() if t.tzinfo is None else t.timestamp()
    return None


def iso_to_epoch(text: Any) -> tuple[float | None, str]:
    """ISO datetime: exact when it carries a zone, else read as UTC with the local-time note."""
    if not isinstance(text, str):
        return None, NOTE_NO_TIME
    try:
        t = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None, f"unparsed time {text!r}"
    if t.tzinfo is None:
        return t.replace(tzinfo=dt.timezone.utc).timestamp(), NOTE_LOCAL_AS_UTC
    return t.timestamp(), "ISO time with zone"
