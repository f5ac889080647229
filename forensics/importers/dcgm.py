"""dcgm-exporter Prometheus text (`/metrics` scraped to a file): one gpu_samples row per device
(and MIG instance) per scrape.

Old labels (`Hostname`) and new ones (`hostname`, `pci_bus_id`, `GPU_I_PROFILE`/`GPU_I_ID`, pod
labels) are accepted; `GPU_I_ID` becomes `mig_index`. A metric seen again for the same device
starts the next scrape's row. DCGM blank sentinels become None with a `status`. Scrapes carry no
time unless the line has a Prometheus timestamp (ms), so `ts_utc` is usually None.
"""
from __future__ import annotations

import json
import re
from typing import Any

from .base import ImportResult, REASON_BITS, extra_json, make_row, to_float, to_int
from .jsonstream import decode_text

TOOL = "dcgm"
NAME_HINTS = re.compile(r"dcgm|\.prom$|metrics", re.I)
_LINE = re.compile(r"^(?P<name>[A-Za-z_:][\w:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+(?P<ts>-?\d+))?\s*$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
METRICS = {
    "DCGM_FI_DEV_GPU_TEMP": "temperature_c", "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_SM_CLOCK": "sm_clock_mhz", "DCGM_FI_DEV_MEM_CLOCK": "mem_clock_mhz",
    "DCGM_FI_DEV_MAX_SM_CLOCK": "sm_clock_max_mhz", "DCGM_FI_DEV_MAX_MEM_CLOCK": "mem_clock_max_mhz",
    "DCGM_FI_DEV_ENFORCED_POWER_LIMIT": "power_limit_w", "DCGM_FI_DEV_POWER_MGMT_LIMIT": "power_limit_w",
    "DCGM_FI_DEV_GPU_UTIL": "util_gpu_pct", "DCGM_FI_DEV_MEM_COPY_UTIL": "util_mem_pct",
    "DCGM_FI_DEV_FB_USED": "mem_used_mib", "DCGM_FI_DEV_FB_TOTAL": "mem_total_mib",
    "DCGM_FI_DEV_PSTATE": "pstate", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": "clock_event_reasons",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": "clock_event_reasons",
}
KEY_LABELS = ("gpu", "UUID", "GPU_I_ID", "modelName")


def sniff(head: bytes, name: str) -> bool:
    """Prometheus text with `DCGM_FI_` / `DCGM_EXP_` metric lines or TYPE lines."""
    return re.search(rb"^(# (TYPE|HELP) )?DCGM_(FI|EXP)_\w+", head, re.M) is not None


def _blank(v: float) -> bool:
    """DCGM blank values: int64 >= 0x7ffffffffffffff0, int32 in [0x7ffffff0, 0x7fffffff], FP64 >= 2^47."""
    if v >= 140737488355328.0:
        return True
    return 0x7FFFFFF0 <= v <= 0x7FFFFFFF


def _convert(col: str, v: float) -> Any:
    if col == "pstate":
        return f"P{int(v)}"
    if col in ("temperature_c", "sm_clock_mhz", "mem_clock_mhz", "sm_clock_max_mhz", "mem_clock_max_mhz",
               "mem_used_mib", "mem_total_mib", "clock_event_reasons"):
        return to_int(v)
    return v


def _new_row(res: ImportResult, line: int, labels: dict[str, str]) -> dict[str, Any]:
    return {"line": line, "labels": labels, "values": {}, "status": {}, "other": {}, "ts": None}


def _emit(res: ImportResult, st: dict[str, Any]) -> None:
    labels = st["labels"]
    vals = st["values"]
    mask = vals.get("clock_event_reasons")
    reasons = {f"reason_{n}": None if mask is None else bool(mask & b) for n, b in REASON_BITS.items()}
    extra = {"labels": {k: v for k, v in labels.items() if k not in KEY_LABELS}, **st["other"]}
    res.gpu_samples.append(make_row(
        "gpu_samples", source_file=res.source, line=st["line"], source_tool="dcgm-exporter",
        ts_utc=st["ts"], time_note="Prometheus sample timestamp" if st["ts"] else
        "scrape carries no time; sample time is the collection time (not in the file)",
        gpu_index=to_int(labels.get("gpu")), mig_index=to_int(labels.get("GPU_I_ID")),
        uuid=labels.get("UUID"), name=labels.get("modelName"),
        status=json.dumps(st["status"]) if st["status"] else None, extra=extra_json(extra),
        **vals, **reasons,
    ))


def read(data: bytes, source: str) -> ImportResult:
    res = ImportResult(TOOL, source)
    text, problems = decode_text(data, source)
    res.problems.extend(problems)
    rows: dict[tuple, dict[str, Any]] = {}
    order: list[dict[str, Any]] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        value = to_float(m.group("value")) if m else None
        if m is None or (value is None and m.group("value") not in ("NaN", "+Inf", "-Inf")):
            res.add_problem(lineno, "not a Prometheus sample line", raw=raw)
            continue
        name = m.group("name")
        if not name.startswith("DCGM_"):
            continue
        labels = dict(_LABEL.findall(m.group("labels") or ""))
        key = tuple(labels.get(k) for k in KEY_LABELS[:3])
        st = rows.get(key)
        col = METRICS.get(name)
        slot = col if col else name
        if st is None or slot in st["values"] or slot in st["other"] or slot in st["status"]:
            st = rows[key] = _new_row(res, lineno, labels)
            order.append(st)
        if m.group("ts"):
            ts = to_float(m.group("ts"))  # not int(): over 4300 digits raises; absurd ones become None
            st["ts"] = ts / 1000.0 if ts is not None else None
        if col is None:
            st["other"][name] = value
        elif value is None or _blank(value):
            st["status"][col] = f"blank {m.group('value')}"
        else:
            st["values"][col] = _convert(col, value)
        if labels != st["labels"]:
            st["other"].setdefault("labels_by_metric", {})[name] = labels
    for st in order:
        res.guard(st["line"], None, lambda st=st: _emit(res, st))
    return res
