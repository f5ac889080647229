"""nvidia-smi telemetry: `--query-gpu=... --format=csv[,noheader][,nounits]`, `dmon`, and the
nvidia_gpu_exporter capture files (their query-gpu CSV and dmon sections are read).

CSV timestamps are local wall-clock time without a zone and are converted as if UTC (see
`time_note`). `[N/A]`, `[Not Supported]` and other bracketed markers become None, and the marker
is kept in `status` (JSON: column -> marker). Old `clocks_throttle_reasons.*` headers are read as
`clocks_event_reasons.*`. dmon: `sm`/`mem` are utilisation %, `pclk` (graphics clock) fills
`sm_clock_mhz`, `-` is None; without `-o DT` there is no timestamp. Unmapped fields go to `extra`.
"""
from __future__ import annotations

import csv
import json
import re
from functools import lru_cache
from typing import Any, Sequence

from .base import (NOTE_LOCAL_AS_UTC, NOTE_NO_TIME, REASON_BITS, ImportResult, extra_json,
                   make_row, naive_to_epoch, to_float, to_int)
from .jsonstream import decode_text

TOOL = "nvidia_smi"
NAME_HINTS = re.compile(r"nvidia|smi|gpu|dmon", re.I)
FIELDS = {  # column -> candidate query fields, best first
    "ts_raw": ("timestamp",), "gpu_index": ("index",), "uuid": ("uuid",),
    "name": ("name",), "pstate": ("pstate",), "temperature_c": ("temperature.gpu",),
    "sm_clock_mhz": ("clocks.current.sm", "clocks.sm"), "sm_clock_max_mhz": ("clocks.max.sm",),
    "mem_clock_mhz": ("clocks.current.memory", "clocks.mem"),
    "mem_clock_max_mhz": ("clocks.max.memory", "clocks.max.mem"),
    "power_w": ("power.draw", "power.draw.average", "power.draw.instant"),
    "power_limit_w": ("enforced.power.limit", "power.limit"),
    "util_gpu_pct": ("utilization.gpu",), "util_mem_pct": ("utilization.memory",),
    "mem_used_mib": ("memory.used",), "mem_total_mib": ("memory.total",),
    "clock_event_reasons": ("clocks_event_reasons.active",),
}
INTS = {"gpu_index", "temperature_c", "sm_clock_mhz", "sm_clock_max_mhz", "mem_clock_mhz",
        "mem_clock_max_mhz", "mem_used_mib", "mem_total_mib"}
REASON_FIELDS = {
    "gpu_idle": "gpu_idle", "applications_clocks_setting": "applications_clocks",
    "sw_power_cap": "sw_power_cap", "hw_slowdown": "hw_slowdown", "sync_boost": "sync_boost",
    "sw_thermal_slowdown": "sw_thermal", "hw_thermal_slowdown": "hw_thermal",
    "hw_power_brake_slowdown": "hw_power_brake", "display_clock_setting": "display_clocks",
}
# Per-GPU fields that mark a --query-gpu header (query-compute-apps/-retired-pages use gpu_uuid, pid).
KNOWN = ({f for cands in FIELDS.values() for f in cands} - {"timestamp"}) | {"driver_version", "fan.speed"}
_FIELD = re.compile(r"^[A-Za-z_][\w.]*( \[[^\]]*\])?$")
_TS = re.compile(r"^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d")
_NUM = re.compile(r"^([-+]?\d+(?:\.\d+)?)(?:\s*[A-Za-z%]+)?$")
_DMON = re.compile(r"^#\s*(Date\s+Time\s+)?gpu\s+(?!.*\bpid\b)(?=.*\b(pwr|gtemp|pclk|mclk|sm)\b)", re.I)
_BANNER = re.compile(r"^#{20,}\s*$")
TS_FORMATS = ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S")


def _norm(token: str) -> str:
    name = token.strip().split(" [", 1)[0].strip().lower()
    return name.replace("clocks_throttle_reasons.", "clocks_event_reasons.", 1)


def _header(line: str) -> list[str] | None:
    tokens = [t.strip() for t in line.split(",")]
    if len(tokens) >= 2 and all(_FIELD.match(t) for t in tokens):
        names = {_norm(t) for t in tokens}
        if names & KNOWN or any(n.startswith("clocks_event_reasons.") for n in names):
            return tokens
    return None


def sniff(head: bytes, name: str) -> bool:
    """A query-gpu CSV header, a headerless row starting with an nvidia-smi timestamp, dmon, or a capture."""
    text = head.decode("utf-8", errors="replace")
    if "nvidia_gpu_exporter GPU capture" in text or re.search(r"^# \$ nvidia-smi", text, re.M):
        return True
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    return bool(_header(first) or _DMON.match(first) or (_TS.match(first) and first.count(", ") >= 2))


def _value(raw: str) -> tuple[str | None, str | None]:
    s = raw.strip()
    if (s.startswith("[") and s.endswith("]")) or s in ("N/A", "-", ""):
        return None, s or "empty"
    return s, None


def _typed(col: str, s: str) -> Any:
    if col == "clock_event_reasons":
        return int(s, 16) if s.lower().startswith("0x") else to_int(s)
    if col in ("ts_raw", "uuid", "name", "pstate"):
        return s
    m = _NUM.match(s)
    v = to_float(m.group(1)) if m else None
    return to_int(v) if col in INTS and v is not None and v == int(v) else v


def _finish(row: dict[str, Any], reasons: dict[str, bool | None]) -> None:
    """Fill the mask from per-reason flags, or the flags from the mask."""
    mask = row["clock_event_reasons"]
    if mask is None and any(v is not None for v in reasons.values()):
        # Derived from the columns present; a reason without a column stays None below.
        row["clock_event_reasons"] = sum(REASON_BITS[n] for n, v in reasons.items() if v)
    for n, bit in REASON_BITS.items():
        flag = reasons.get(n)
        row[f"reason_{n}"] = flag if flag is not None else (None if mask is None else bool(mask & bit))


@lru_cache(maxsize=64)
def _plan(header: tuple[str, ...]) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[int, str], ...], tuple[int, ...]]:
    """Where each column lives in a header: computed once per header, not once per row."""
    names = [_norm(h) for h in header]
    pos = {n: i for i, n in reversed(list(enumerate(names)))}
    cols: list[tuple[str, int]] = []
    used: set[int] = set()
    for col, cands in FIELDS.items():
        idx = next((pos[c] for c in cands if c in pos), None)
        if idx is not None:
            cols.append((col, idx))
            used.add(idx)
    reasons: list[tuple[int, str]] = []
    for i, n in enumerate(names):
        suffix = n.removeprefix("clocks_event_reasons.")
        if suffix in REASON_FIELDS and n != suffix:
            used.add(i)
            reasons.append((i, REASON_FIELDS[suffix]))
    unused = tuple(i for i in range(len(header)) if i not in used)
    return tuple(cols), tuple(reasons), unused


def _csv_row(res: ImportResult, line: int, header: list[str], values: list[str],
             note: str, base_extra: dict[str, Any]) -> None:
    cols, reason_cols, unused = _plan(tuple(header))
    row: dict[str, Any] = dict.fromkeys(FIELDS)
    status: dict[str, str] = {}
    for col, idx in cols:
        s, marker = _value(values[idx])
        if marker is not None:
            status[col] = marker
        elif (v := _typed(col, s)) is None:
            status[col] = f"unparsed: {s}"
        else:
            row[col] = v
    reasons: dict[str, bool | None] = {}
    for i, name in reason_cols:
        v = values[i].strip().lower()
        reasons[name] = True if v == "active" else False if v == "not active" else None
    _finish(row, reasons)
    ts = naive_to_epoch(row["ts_raw"], TS_FORMATS)
    extra = {**base_extra, **{header[i]: values[i].strip() for i in unused}}
    res.gpu_samples.append(make_row(
        "gpu_samples", source_file=res.source, line=line, source_tool="nvidia-smi --query-gpu",
        ts_utc=ts, time_note=note if ts is not None else NOTE_NO_TIME,
        status=json.dumps(status) if status else None, extra=extra_json(extra), **row,
    ))


def parse_csv(res: ImportResult, lines: list[tuple[int, str]], fields: Sequence[str] | None = None,
              note: str = NOTE_LOCAL_AS_UTC, base_extra: dict[str, Any] | None = None) -> None:
    """Rows of a query-gpu CSV given as (line number, text); `fields` names a headerless file's columns."""
    header = list(fields) if fields else None
    for lineno, text in lines:
        if not text.strip():
            continue
        new = _header(text)
        if new is not None:
            if header is not None:
                res.add_problem(lineno, "repeated header line skipped" if new == header
                                else "new header line mid-file; columns switched", raw=text)
            header = new
            continue
        if header is None:
            res.add_problem(lineno, "no header line: pass the --query-gpu field list (fields=...)", raw=text)
            return
        values = next(csv.reader([text], skipinitialspace=True), [])
        if len(values) != len(header):
            res.add_problem(lineno, f"{len(values)} values for {len(header)} columns; row skipped", raw=text)
            continue
        res.guard(lineno, None, lambda: _csv_row(res, lineno, header, values, note, base_extra or {}))


_DMON_COLS = {"gpu": "gpu_index", "pwr": "power_w", "gtemp": "temperature_c", "sm": "util_gpu_pct",
              "mem": "util_mem_pct", "mclk": "mem_clock_mhz", "pclk": "sm_clock_mhz"}


def parse_dmon(res: ImportResult, lines: list[tuple[int, str]], base_extra: dict[str, Any] | None = None) -> None:
    """Rows of `nvidia-smi dmon` output given as (line number, text); `#` lines are headers."""
    names: list[str] | None = None
    for lineno, text in lines:
        if not text.strip():
            continue
        if text.lstrip().startswith("#"):
            if _DMON.match(text.strip()):
                names = text.strip().lstrip("#").split()
            continue
        tokens = text.split()
        if names is None or len(tokens) != len(names):
            res.add_problem(lineno, "dmon row does not fit the header; skipped", raw=text)
            continue
        row: dict[str, Any] = {}
        status: dict[str, str] = {}
        extra = dict(base_extra or {})
        for n, tok in zip(names, tokens):
            col = _DMON_COLS.get(n.lower())
            if col is None:
                extra[n] = tok
            elif tok == "-":
                status[col] = "-"
            else:
                row[col] = _typed(col, tok)
        date, time = extra.pop("Date", None), extra.pop("Time", None)
        ts = naive_to_epoch(f"{date} {time}", ("%Y%m%d %H:%M:%S",)) if date and time else None
        reasons: dict[str, bool | None] = {}
        row["clock_event_reasons"] = None
        _finish(row, reasons)
        res.gpu_samples.append(make_row(
            "gpu_samples", source_file=res.source, line=lineno, source_tool="nvidia-smi dmon",
            ts_utc=ts, ts_raw=f"{date} {time}" if ts else None,
            time_note=NOTE_LOCAL_AS_UTC if ts else "dmon without -o DT: no timestamp",
            status=json.dumps(status) if status else None, extra=extra_json(extra), **row,
        ))


def _capture(res: ImportResult, lines: list[str]) -> None:
    """Sections of an nvidia_gpu_exporter capture; only query-gpu CSV and dmon bodies are read."""
    m = next((re.match(r"collected_at:\s+(\S+)", ln) for ln in lines if ln.startswith("collected_at:")), None)
    collected = naive_to_epoch(m.group(1).rstrip("Z"), ("%Y-%m-%dT%H:%M:%S",)) if m else None
    i, n = 0, len(lines)
    while i < n:
        if not (_BANNER.match(lines[i]) and i + 1 < n and " :: " in lines[i + 1]):
            i += 1
            continue
        title = lines[i + 1].lstrip("# ").strip()
        j = i + 2
        while j < n and not _BANNER.match(lines[j]):
            j += 1
        k = j + 1
        while k < n and not _BANNER.match(lines[k]):
            k += 1
        body = [(x + 1, lines[x]) for x in range(j + 1, k)]
        first = next((t for _, t in body if t.strip()), "")
        extra = {"capture_section": title}
        if _DMON.match(first.strip()):
            parse_dmon(res, body, extra)
        elif _header(first):
            before = len(res.gpu_samples)
            parse_csv(res, body, base_extra=extra)
            for row in res.gpu_samples[before:]:
                if collected is not None and row["ts_utc"] is not None and abs(row["ts_utc"] - collected) < 600:
                    row["time_note"] = "local wall clock; capture collected_at (UTC) agrees, so the host zone is UTC"
        i = k


def read(data: bytes, source: str, fields: Sequence[str] | None = None) -> ImportResult:
    """Read any of the nvidia-smi shapes; `fields` is the --query-gpu list of a noheader CSV."""
    res = ImportResult(TOOL, source)
    text, problems = decode_text(data, source)
    res.problems.extend(problems)
    lines = text.splitlines()
    if any("nvidia_gpu_exporter GPU capture" in ln for ln in lines[:10]):
        _capture(res, lines)
        return res
    numbered = list(enumerate(lines, start=1))
    first = next((t for _, t in numbered if t.strip()), "")
    if _DMON.match(first.strip()):
        parse_dmon(res, numbered)
    else:
        parse_csv(res, numbered, fields=fields)
    return res
