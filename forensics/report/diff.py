"""What changed between two launches: configuration, backends, capacity, findings, benchmark figures."""
from __future__ import annotations

from typing import Any, Sequence

from forensics.archive import Connection
from forensics.model import Finding
from forensics.report.build import _fact_value, _first_by, _rows, _same, fmt_value, short
from forensics.report.markdown import sections_md
from forensics.report.model import Para, Section, Table
from forensics.rules import Rule, run_rules

CAPACITY = ("kv_cache_tokens", "kv_cache_gib", "gpu_blocks", "max_total_num_tokens", "context_len",
            "max_concurrency", "max_concurrency_tokens")
SLOTS = ("max_running_requests", "state_slots", "cuda_graph_max_bs")
FIGURES = (("completed", "completed"), ("failed", "failed"), ("median_ttft_ms", "median TTFT ms"),
           ("p99_ttft_ms", "p99 TTFT ms"), ("median_tpot_ms", "median TPOT ms"),
           ("output_throughput", "output tok/s"), ("request_throughput", "req/s"))


def _v(row: dict[str, Any] | None) -> str:
    return short(fmt_value(_fact_value(row), row.get("unit")), 70) if row else ""


def _compare(a: dict[str, dict], b: dict[str, dict], names: Sequence[str] | None, only_changed: bool) -> Table:
    keys = sorted(set(a) | set(b)) if names is None else [n for n in names if n in a or n in b]
    rows, marks = [], set()
    for k in keys:
        ra, rb = a.get(k), b.get(k)
        same = ra is not None and rb is not None and _same(_fact_value(ra), _fact_value(rb))
        if only_changed and same:
            continue
        if not same:
            marks.add(len(rows))
        rows.append([k, _v(ra), _v(rb), "" if same else "changed" if ra and rb else "only A" if ra else "only B"])
    return Table(["name", "A", "B", ""], rows, marks)


def _point_key(p: dict[str, Any]) -> tuple[str, float] | None:
    if p.get("max_concurrency") is not None:
        return ("concurrency", float(p["max_concurrency"]))
    if p.get("request_rate_inf"):
        return ("rate", float("inf"))
    if p.get("request_rate") is not None:
        return ("rate", float(p["request_rate"]))
    return None


def _points(con: Connection, run_id: str) -> dict[tuple[str, float], dict[str, Any]]:
    """Benchmark points by (concurrency|rate, value); repeated points keep the last one."""
    out: dict[tuple[str, float], dict[str, Any]] = {}
    for p in _rows(con, "SELECT * FROM bench_points WHERE run_id = ? ORDER BY source_file, point_index", [run_id]):
        k = _point_key(p)
        if k is not None:
            out[k] = p
    return out


def _delta(a: Any, b: Any) -> str:
    if a is None or b is None:
        return ""
    if not a:
        return ""
    return f"{(b - a) / abs(a) * 100:+.1f}%"


def diff_sections(con: Connection, run_a: str, run_b: str, rules: Sequence[Rule],
                  findings: Sequence[Finding] | None = None) -> list[Section]:
    """The sections of `forensics diff A B` (both runs in the same archive)."""
    fa = _rows(con, "SELECT * FROM facts WHERE run_id = ?", [run_a])
    fb = _rows(con, "SELECT * FROM facts WHERE run_id = ?", [run_b])
    runs = {r["run_id"]: r for r in _rows(con, "SELECT * FROM runs WHERE run_id IN (?, ?)", [run_a, run_b])}
    out = [Section("Runs", [Table(["", "A", "B"], [
        ["run", run_a, run_b],
        ["engine", *(" ".join(x for x in (runs.get(r, {}).get("engine"), runs.get(r, {}).get("engine_version")) if x)
                     for r in (run_a, run_b))],
        ["model", *(runs.get(r, {}).get("model") or "" for r in (run_a, run_b))],
        ["outcome", *(runs.get(r, {}).get("outcome") or "" for r in (run_a, run_b))],
    ], marks={3} if runs.get(run_a, {}).get("outcome") != runs.get(run_b, {}).get("outcome") else set())])]
    req_a, req_b = _first_by(fa, "requested"), _first_by(fb, "requested")
    eff_a, eff_b = _first_by(fa, "effective"), _first_by(fb, "effective")
    t = _compare(req_a, req_b, None, only_changed=True)
    out.append(Section("Requested configuration (changed only)", [t if t.rows else Para("No change.")]))
    backends = sorted(k for k in set(eff_a) | set(eff_b) if "backend" in k or k in ("kv_cache_dtype", "cudagraph_mode", "gemm_kernel"))
    out.append(Section("Backends", [_compare(eff_a, eff_b, backends, False) if backends else Para("No backend reported.")]))
    t = _compare(eff_a, eff_b, CAPACITY + SLOTS, False)
    out.append(Section("KV capacity and state slots", [t if t.rows else Para("Not reported by either run.")]))
    rest = {k for k in set(eff_a) | set(eff_b)} - set(backends) - set(CAPACITY) - set(SLOTS)
    t = _compare({k: v for k, v in eff_a.items() if k in rest}, {k: v for k, v in eff_b.items() if k in rest}, None, True)
    out.append(Section("Other effective values (changed only)", [t if t.rows else Para("No change.")]))
    if findings is None:
        findings = run_rules(con, rules, runs=[run_a, run_b])
    by = {run_a: {f.rule: f for f in findings if f.run == run_a}, run_b: {f.rule: f for f in findings if f.run == run_b}}
    rows, marks = [], set()
    for rule in sorted(set(by[run_a]) | set(by[run_b])):
        a, b = by[run_a].get(rule), by[run_b].get(rule)
        state = "both" if a and b else "gone in B" if a else "new in B"
        if state != "both":
            marks.add(len(rows))
        rows.append([rule, state, short((b or a).severity, 10), short(a.message, 100) if a else "", short(b.message, 100) if b else ""])
    out.append(Section("Findings", [Table(["rule", "", "severity", "A", "B"], rows, marks) if rows else Para("No findings on either run.")]))
    pa, pb = _points(con, run_a), _points(con, run_b)
    rows = []
    for key in sorted(set(pa) & set(pb)):
        a, b = pa[key], pb[key]
        for col, label in FIGURES:
            if a.get(col) is None and b.get(col) is None:
                continue
            rows.append([f"{key[0]} {fmt_value(key[1])}", label, fmt_value(_round(a.get(col))), fmt_value(_round(b.get(col))),
                         _delta(a.get(col), b.get(col))])
    only = [f"{k[0]} {fmt_value(k[1])} only in {'A' if k in pa else 'B'}" for k in sorted(set(pa) ^ set(pb))]
    blocks: list[Any] = [Table(["point", "figure", "A", "B", "B vs A"], rows) if rows else
                         Para("No benchmark point matches on max_concurrency or request_rate.")]
    if only:
        blocks.append(Para("Unmatched points: " + "; ".join(only) + "."))
    out.append(Section("Benchmark figures at matching points", blocks))
    return out


def _round(v: Any) -> Any:
    return round(v, 2) if isinstance(v, float) else v


def render_diff_markdown(run_a: str, run_b: str, sections: Sequence[Section]) -> str:
    return "\n".join([f"# Diff: {run_a} -> {run_b}", "", *sections_md(sections)]).rstrip("\n") + "\n"
