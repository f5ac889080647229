"""Crash-safe GPU sampler: NVML readings -> append-only JSON-lines journal -> Parquet.

The loop receives its nvml object (the gate in forensics.gpu.nvml, or a fake fleet in tests).
A command given to `Session.run` is started after a baseline tick, in its own process group;
SIGINT/SIGTERM to the sampler stop sampling and are forwarded to it; its exit code is returned.
Each tick's rows are appended to `OUT.partial`, flushed and fsynced, so a `kill -9` loses at
most the tick being written; a torn last line is skipped on recovery. On a clean stop the
journal becomes `OUT` (Parquet) and is removed; `recover(OUT)` does the same for a journal left
behind by a crash.

Schema (one row per device per tick; a MIG device has its own rows):

    ts_utc                float64  wall-clock time of the tick, seconds since the Unix epoch (UTC)
    ts_mono               float64  time.monotonic() of the tick, seconds; for durations
    gpu_index             int32    NVML index of the GPU (of the parent GPU for a MIG device)
    mig_index             int32    MIG device index within its GPU; NULL for a whole GPU
    uuid, name            string   from enumeration (kept on rows of a GPU lost later)
    gpu_status            string   ok | gpu_lost | <status of the handle when it could not be had>
    temperature_c         float64  GPU core temperature, degrees Celsius
    sm_clock_mhz          int32    SM clock now, MHz;   sm_clock_max_mhz  its maximum, MHz
    mem_clock_mhz         int32    memory clock now, MHz; mem_clock_max_mhz its maximum, MHz
    power_w               float64  board power draw, watts; power_limit_w  enforced limit, watts
    util_gpu_pct          int32    kernel-busy percent; util_mem_pct  memory-controller-busy percent
    mem_used_mib          int64    device memory used, MiB; mem_total_mib  total, MiB
    pstate                int32    performance state, 0 (P0, fastest) to 15
    clock_event_reasons   int64    raw nvmlClocksEventReason* bitmask (formerly "throttle reasons")
    reason_<name>         bool     one per decoded bit, see REASONS; NULL when the mask is NULL
    violation_power_ns    int64    cumulative ns clocks were held below max by the power policy
    violation_thermal_ns  int64    the same for the thermal policy
    <metric>_status       string   for each metric above: NULL when ok, else why it is NULL
                                   (not_supported, no_permission, gpu_lost, function_not_found,
                                   no_driver, unknown_error); a value is never a sentinel
"""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from forensics.errors import InputError
from forensics.gpu.nvml import METRICS, OK, Device

# nvml.h nvmlClocksEventReason* bits (tests check them against pynvml's constants).
REASONS = (
    ("gpu_idle", 0x1), ("applications_clocks", 0x2), ("sw_power_cap", 0x4), ("hw_slowdown", 0x8),
    ("sync_boost", 0x10), ("sw_thermal", 0x20), ("hw_thermal", 0x40), ("hw_power_brake", 0x80),
    ("display_clocks", 0x100),
)
_INT_METRICS = {"sm_clock_mhz": "int32", "sm_clock_max_mhz": "int32", "mem_clock_mhz": "int32",
                "mem_clock_max_mhz": "int32", "util_gpu_pct": "int32", "util_mem_pct": "int32",
                "mem_used_mib": "int64", "mem_total_mib": "int64", "pstate": "int32", "clock_event_reasons": "int64",
                "violation_power_ns": "int64", "violation_thermal_ns": "int64"}
JOURNAL_SUFFIX = ".partial"


def columns() -> list[tuple[str, str]]:
    """(name, arrow type name) of every column, in order."""
    cols = [("ts_utc", "float64"), ("ts_mono", "float64"), ("gpu_index", "int32"), ("mig_index", "int32"),
            ("uuid", "string"), ("name", "string"), ("gpu_status", "string")]
    cols += [(m, _INT_METRICS.get(m, "float64")) for m in METRICS]
    cols += [(f"reason_{r}", "bool") for r, _ in REASONS]
    cols += [(f"{m}_status", "string") for m in METRICS]
    return cols


def decode_reasons(mask: int | None) -> dict[str, bool | None]:
    """reason_<name> -> bool for each known bit of a clock-event mask; all None for a NULL mask."""
    return {f"reason_{r}": None if mask is None else bool(mask & bit) for r, bit in REASONS}


def parse_interval(text: str) -> float:
    """Seconds in "1s", "500ms", "2m" or a bare number of seconds.

    Raises:
        InputError: not a positive duration.
    """
    t = text.strip().lower()
    for unit, mult in (("ms", 0.001), ("s", 1.0), ("m", 60.0)):
        if t.endswith(unit):
            t, scale = t[: -len(unit)], mult
            break
    else:
        scale = 1.0
    try:
        sec = float(t) * scale
    except ValueError:
        sec = -1.0
    if not sec > 0 or math.isinf(sec):
        raise InputError("bad --interval", f"{text!r} is not a positive duration", hint="use e.g. 1s, 500ms or 2m")
    return sec


@dataclass
class Tally:
    """What a run saw: ticks, rows, non-ok statuses per metric, missing NVML functions."""

    ticks: int = 0
    rows: int = 0
    devices: int = 0
    statuses: Counter = field(default_factory=Counter)
    missing_functions: set[str] = field(default_factory=set)
    lost: set[tuple[int, int | None]] = field(default_factory=set)


def take(nvml: Any, devices: Sequence[Device], tally: Tally, now: tuple[float, float] | None = None) -> list[dict]:
    """One tick: a row per device. A GPU once lost is not queried again (its rows say gpu_lost)."""
    ts_utc, ts_mono = now or (time.time(), time.monotonic())
    rows = []
    for d in devices:
        key = (d.gpu_index, d.mig_index)
        if d.status != OK or key in tally.lost:
            got = {m: (None, "gpu_lost" if key in tally.lost else d.status) for m in METRICS}
        else:
            got = nvml.read(d)
        row: dict[str, Any] = {"ts_utc": ts_utc, "ts_mono": ts_mono, "gpu_index": d.gpu_index,
                               "mig_index": d.mig_index, "uuid": d.uuid, "name": d.name}
        stats = {}
        for m in METRICS:
            v, st = got[m]
            row[m] = v if st == OK else None
            stats[f"{m}_status"] = None if st == OK else st
            if st != OK:
                tally.statuses[(m, st)] += 1
        if "gpu_lost" in stats.values():
            tally.lost.add(key)
        row["gpu_status"] = "gpu_lost" if key in tally.lost else d.status
        row.update(decode_reasons(row["clock_event_reasons"]))
        row.update(stats)
        rows.append(row)
    tally.ticks += 1
    tally.rows += len(rows)
    return rows


class Journal:
    """Append-only JSON-lines file; each `append` is flushed and fsynced before it returns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._f = open(path, "xb")  # never clobber a journal a crash left behind
        except FileExistsError:
            raise InputError("cannot start sampling", f"a journal from an earlier run is still there ({path})",
                             hint=f"forensics sample --recover {str(path)[: -len(JOURNAL_SUFFIX)]}") from None

    def append(self, rows: list[dict]) -> None:
        self._f.write(b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in rows))
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()


def read_journal(path: Path, batch: int = 50_000):
    """Yield lists of rows from a journal; ends by yielding the count of skipped lines (an int).

    Only a line ending in a newline was fully written; a torn last line (kill -9 mid-write) or
    an unreadable one is skipped and counted.
    """
    rows: list[dict] = []
    bad = 0
    with open(path, "rb") as f:
        for line in f:
            try:
                if not line.endswith(b"\n"):
                    raise ValueError("torn line")
                rows.append(json.loads(line))
            except ValueError:
                bad += 1
            if len(rows) >= batch:
                yield rows
                rows = []
    if rows:
        yield rows
    yield bad


def write_parquet(batches, out: Path) -> tuple[int, int]:
    """Write row batches (as `read_journal` yields them) with the fixed schema, atomically.

    Returns (rows written, lines skipped).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(n, pa.bool_() if t == "bool" else getattr(pa, t)()) for n, t in columns()])
    tmp = out.with_name(out.name + ".tmp")
    n = bad = 0
    with pq.ParquetWriter(tmp, schema) as w:
        for b in batches:
            if isinstance(b, int):
                bad = b
                continue
            w.write_table(pa.Table.from_pylist(b, schema=schema))
            n += len(b)
    os.replace(tmp, out)
    return n, bad


def journal_path(out: str | Path) -> Path:
    """The journal beside OUT: OUT.partial."""
    return Path(str(out) + JOURNAL_SUFFIX)


def recover(out: str | Path) -> tuple[int, int]:
    """Turn OUT.partial (or a journal path given directly) into OUT; return (rows, lines skipped).

    Raises:
        InputError: there is no journal.
    """
    p = Path(out)
    if p.name.endswith(JOURNAL_SUFFIX):
        p = p.with_name(p.name[: -len(JOURNAL_SUFFIX)])
    j = journal_path(p)
    if not j.exists():
        raise InputError("nothing to recover", f"{j} does not exist", hint="give the --out path of the crashed run")
    n, bad = write_parquet(read_journal(j), p)
    j.unlink()
    return n, bad


class Session:
    """One sampling run: NVML -> journal every `interval` s until stopped or the child exits."""

    def __init__(self, nvml: Any, out: str | Path, interval: float = 1.0) -> None:
        self.nvml, self.out, self.interval = nvml, Path(out), interval
        self.stop_event = threading.Event()
        self.tally = Tally()
        self.proc: subprocess.Popen | None = None

    def request_stop(self, signum: int | None = None) -> None:
        """Stop sampling (from a signal handler too); a child gets the same signal."""
        self.stop_event.set()
        if signum is not None and self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signum)

    def run(self, argv: Sequence[str] = (), max_ticks: int | None = None) -> int:
        """Sample until stopped, `max_ticks`, or the child `argv` exits; return the child's exit code (0 without).

        Raises:
            GpuUnavailable: NVML cannot start (no driver) or sees no GPU; nothing is written then.
            InputError: a journal from an earlier run is in the way, or the child cannot start.
        """
        self.nvml.init()
        try:
            devices = self.nvml.devices()
            self.tally.devices = len(devices)
            journal = Journal(journal_path(self.out))
            try:
                return self._loop(devices, journal, argv, max_ticks)
            finally:
                journal.close()
                self.tally.missing_functions |= set(self.nvml.missing_functions)
                recover(self.out)
        finally:
            self.nvml.shutdown()

    def _loop(self, devices: list[Device], journal: Journal, argv: Sequence[str], max_ticks: int | None) -> int:
        journal.append(take(self.nvml, devices, self.tally))  # a baseline before the child starts
        if argv:
            try:
                # Own process group: a terminal's Ctrl-C reaches only the sampler, which forwards
                # it once (request_stop); otherwise the child would get SIGINT twice.
                self.proc = subprocess.Popen(list(argv), process_group=0)
            except OSError as exc:
                raise InputError("cannot run the command", str(exc), where=argv[0]) from None
            threading.Thread(target=lambda: (self.proc.wait(), self.stop_event.set()), daemon=True).start()
        start = time.monotonic()
        while not self.stop_event.is_set() and (max_ticks is None or self.tally.ticks < max_ticks):
            k = max(self.tally.ticks, math.floor((time.monotonic() - start) / self.interval) + 1)
            if self.stop_event.wait(max(0.0, start + k * self.interval - time.monotonic())):
                break
            journal.append(take(self.nvml, devices, self.tally))
        if self.proc is None:
            return 0
        rc = self.proc.wait()
        return 128 - rc if rc < 0 else rc  # killed by signal N -> 128+N, as a shell reports it


def install_signal_handlers(session: Session) -> dict[int, Any]:
    """Route SIGINT/SIGTERM to `session.request_stop`; return the old handlers to restore."""
    old = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        old[sig] = signal.signal(sig, lambda signum, _frame: session.request_stop(signum))
    return old

