"""Per-GPU summary inside each benchmark window: `forensics gpu-summary`.

A benchmark point's window is [ts_end_utc - duration_s, ts_end_utc] (the `gpu.throttled` rule
uses the same). Per window and GPU: samples, max temperature, SM clock range, and the time under
each NVML clock-event reason, as samples with the reason x the GPU's median sample interval (the
median gap between its consecutive samples in the run). A run without a known window, or whose
samples carry no time, is summarised over all its samples, and the output says so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from forensics.archive import Connection
from forensics.errors import ForensicsError

SCHEMA = "forensics.gpu-summary/1"
# slowdown reasons first, then the informational ones; names as in gpu_samples.reason_*
REASONS = ("hw_slowdown", "hw_thermal", "sw_thermal", "hw_power_brake", "sw_power_cap",
           "sync_boost", "applications_clocks", "display_clocks", "gpu_idle")
NO_WINDOW = "no benchmark window known: all samples of the run"
NO_TIME = "GPU samples carry no time, so no benchmark window can hold them: all samples of the run"

_GPU = ("coalesce(gpu_index::VARCHAR || coalesce(':' || mig_index::VARCHAR, ''), uuid, name, '?')")


@dataclass
class Window:
    label: str
    source_file: str | None = None
    point_index: int | None = None
    line: int | None = None
    t0: float | None = None
    t1: float | None = None
    gpus: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"window": self.label, "source_file": self.source_file, "point_index": self.point_index,
                "line": self.line, "t0_utc": self.t0, "t1_utc": self.t1, "gpus": self.gpus}


@dataclass
class GpuSummary:
    run_id: str
    windowed: bool
    note: str | None
    samples: int
    windows: list[Window] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"schema": SCHEMA, "run_id": self.run_id, "windowed": self.windowed, "note": self.note,
                "samples": self.samples, "windows": [w.as_dict() for w in self.windows]}


def _num(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _aggregate(con: Connection, run_id: str, where: str, params: list[Any]) -> list[dict[str, Any]]:
    reasons = ", ".join(f"count(*) FILTER (WHERE s.reason_{r}) AS n_{r}" for r in REASONS)
    sql = f"""
        WITH g AS (
            SELECT *, {_GPU} AS gpu FROM gpu_samples WHERE run_id = ?
        ), gaps AS (
            SELECT gpu, ts_utc - lag(ts_utc) OVER (PARTITION BY gpu, source_file ORDER BY ts_utc) AS dt FROM g
        ), iv AS (
            SELECT gpu, median(dt) AS interval_s FROM gaps WHERE dt > 0 GROUP BY gpu
        )
        SELECT s.gpu, any_value(s.name) AS name, count(*) AS samples,
               max(s.temperature_c) AS max_temperature_c,
               min(s.sm_clock_mhz) AS sm_clock_min_mhz, max(s.sm_clock_mhz) AS sm_clock_max_mhz,
               any_value(iv.interval_s) AS interval_s, {reasons}
        FROM g AS s LEFT JOIN iv USING (gpu)
        WHERE {where}
        GROUP BY s.gpu
        ORDER BY try_cast(split_part(s.gpu, ':', 1) AS INTEGER) NULLS LAST, s.gpu
    """
    cur = con.execute(sql, [run_id, *params])
    names = [d[0] for d in cur.description]
    out = []
    for row in cur.fetchall():
        rec = dict(zip(names, row))
        iv = rec["interval_s"]
        gpu = {"gpu": rec["gpu"], "name": rec["name"], "samples": rec["samples"],
               "max_temperature_c": _num(rec["max_temperature_c"]),
               "sm_clock_min_mhz": _num(rec["sm_clock_min_mhz"]), "sm_clock_max_mhz": _num(rec["sm_clock_max_mhz"]),
               "interval_s": _num(iv), "reasons": {}}
        for r in REASONS:
            n = rec[f"n_{r}"]
            gpu["reasons"][r] = {"samples": n, "seconds": _num(n * iv) if iv is not None else None}
        out.append(gpu)
    return out


def gpu_summary(con: Connection, run_id: str) -> GpuSummary:
    """Summarise one run's GPU samples per benchmark window (or over all samples).

    Raises:
        ForensicsError: the run is not in the archive.
    """
    if con.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone() is None:
        raise ForensicsError(f"no run `{run_id}` in the archive", hint="list runs with `forensics runs`")
    total = con.execute("SELECT count(*) FROM gpu_samples WHERE run_id = ?", [run_id]).fetchone()[0]
    wins = con.execute(
        """SELECT source_file, point_index, line, ts_end_utc - duration_s, ts_end_utc FROM bench_points
           WHERE run_id = ? AND ts_end_utc IS NOT NULL AND duration_s > 0
           ORDER BY ts_end_utc - duration_s, source_file, point_index""", [run_id]).fetchall()
    timed = con.execute("SELECT count(ts_utc) FROM gpu_samples WHERE run_id = ?", [run_id]).fetchone()[0]
    if not wins or (total and not timed):
        note = (NO_WINDOW if not wins else NO_TIME) if total else "no GPU samples in this run"
        res = GpuSummary(run_id, False, note, total)
        res.windows.append(Window("all samples", gpus=_aggregate(con, run_id, "true", [])))
        return res
    res = GpuSummary(run_id, True, None if total else "no GPU samples in this run", total)
    for src, point, line, t0, t1 in wins:
        w = Window(f"point {point}", src, point, line, t0, t1)
        w.gpus = _aggregate(con, run_id, "s.ts_utc BETWEEN ? AND ?", [t0, t1])
        res.windows.append(w)
    if total and not any(w.gpus for w in res.windows):
        res.note = "no GPU sample falls inside a benchmark window (check the clocks: time_note of each table)"
    return res


# ---------------------------------------------------------------------------------------------
# output (strings only)

def _reasons_text(g: dict[str, Any]) -> str:
    parts = []
    for r, v in g["reasons"].items():
        if v["samples"]:
            parts.append(f"{r} {v['seconds']:g} s" if v["seconds"] is not None else f"{r} {v['samples']} samples")
    return ", ".join(parts) or "none"


def _range(g: dict[str, Any]) -> str:
    lo, hi = g["sm_clock_min_mhz"], g["sm_clock_max_mhz"]
    return "?" if lo is None else f"{lo}-{hi}"


def format_summary(res: GpuSummary, fmt: str) -> str:
    """Render as `json`, `md` or `table`."""
    if fmt == "json":
        return json.dumps(res.as_dict(), indent=2, ensure_ascii=False, default=str) + "\n"
    from tabulate import tabulate

    rows = []
    for w in res.windows:
        if not w.gpus:
            rows.append([w.label, "-", 0, "-", "-", "-"])
        for g in w.gpus:
            rows.append([w.label, g["gpu"], g["samples"], _num(g["max_temperature_c"]) if g["max_temperature_c"] is not None else "?",
                         _range(g), _reasons_text(g)])
    head = f"{res.run_id}: {res.samples} GPU sample(s)" + (f"; {res.note}" if res.note else "")
    tablefmt = "github" if fmt == "md" else "simple"
    table = tabulate(rows, headers=["window", "gpu", "samples", "max temp C", "sm clock MHz", "time under reason"],
                     tablefmt=tablefmt)
    return f"{'# ' if fmt == 'md' else ''}{head}\n\n{table}\n"
