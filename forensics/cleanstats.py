"""Benchmark statistics recomputed without the requests the rules flag: `forensics clean-stats`.

The SQL lives in `rules/views/clean_stats.sql` (TEMP views, so it runs on a read-only connection
and in the duckdb shell). It excludes, per request, what `bench.failed_requests`,
`stream.truncated` and `bench.prefix_cache_hit` flag, with the same `rule_settings` thresholds
(and any `--set` overrides), and recomputes TTFT, TPOT and output throughput per benchmark point
next to the point's original figures.
"""
from __future__ import annotations

import csv
import io
import json
from typing import Any, Sequence

from forensics.archive import Connection
from forensics.errors import ForensicsError
from forensics.resources import data_dir

SCHEMA = "forensics.clean-stats/1"
VIEW_FILE = ("views", "clean_stats.sql")
METRICS = ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
           "output_throughput")


def view_sql() -> str:
    return data_dir("rules").joinpath(*VIEW_FILE).read_text(encoding="utf-8")


def create_views(con: Connection) -> None:
    """Create the TEMP views clean_request_flags, clean_excluded and clean_stats on `con`.

    Raises:
        ForensicsError: the view SQL fails on this archive.
    """
    try:
        for stmt in con.extract_statements(view_sql()):
            con.execute(stmt)
    except Exception as exc:  # duckdb.Error; only archive imports duckdb
        raise ForensicsError("cannot create the clean-stats views", str(exc).splitlines()[0],
                             hint=f"rules/{'/'.join(VIEW_FILE)}") from None


def _select(con: Connection, view: str, run_ids: Sequence[str], order: str) -> tuple[list[str], list[tuple]]:
    cur = con.execute(f"SELECT * FROM {view} WHERE list_contains(?, run_id) ORDER BY {order}", [list(run_ids)])
    return [d[0] for d in cur.description], cur.fetchall()


def clean_stats(con: Connection, run_ids: Sequence[str]) -> tuple[list[str], list[tuple]]:
    """Rows of clean_stats for these runs (create_views first)."""
    return _select(con, "clean_stats", run_ids, "run_id, source_file, point_index NULLS LAST")


def excluded(con: Connection, run_ids: Sequence[str]) -> tuple[list[str], list[tuple]]:
    """Rows of clean_excluded for these runs: one per excluded request, with its reason."""
    return _select(con, "clean_excluded", run_ids, "run_id, source_file, point_index NULLS LAST, request_index")


# ---------------------------------------------------------------------------------------------
# output (strings only)

def _r(v: Any, nd: int = 2) -> Any:
    return round(v, nd) if isinstance(v, float) else v


def format_clean(names: list[str], rows: list[tuple], fmt: str, what: str = "stats") -> str:
    """Render clean_stats (what="stats") or clean_excluded (what="excluded") rows."""
    recs = [dict(zip(names, r)) for r in rows]
    if fmt == "json":
        key = "points" if what == "stats" else "excluded"
        return json.dumps({"schema": SCHEMA, key: recs}, indent=2, ensure_ascii=False, default=str) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(names)
        w.writerows(rows)
        return buf.getvalue()
    from tabulate import tabulate

    tablefmt = "github" if fmt == "md" else "simple"
    if not recs:
        return ("no benchmark points with per-request rows\n" if what == "stats" else "no excluded requests\n")
    if what == "excluded":
        body = [[r["run_id"], r["point_index"], r["request_index"], r["reason"], r["why"]] for r in recs]
        return tabulate(body, headers=["run", "point", "request", "reason", "why"], tablefmt=tablefmt) + "\n"
    headers = ["run", "point", "conc", "rate", "kept/all", "excl hit/trunc/fail"]
    for m in METRICS:
        headers.append(m.replace("_ms", "").replace("output_throughput", "out tok/s") + " orig->clean")
    body = []
    for r in recs:
        row = [r["run_id"], r["point_index"], _r(r["max_concurrency"]), _r(r["request_rate"]),
               f"{r['kept']}/{r['requests']}",
               f"{r['excluded_cache_hit']}/{r['excluded_truncated']}/{r['excluded_failed']}"]
        for m in METRICS:
            row.append(f"{_fmt(r[m])} -> {_fmt(r['clean_' + m])}")
        body.append(row)
    return tabulate(body, headers=headers, tablefmt=tablefmt) + "\n"


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:.2f}" if isinstance(v, float) else str(v)
