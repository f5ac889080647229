"""Build a run's diagnosis report from the archive (and the run's own files for context lines).

Everything comes from tables `forensics ingest` and the rules already fill: `runs`, `facts`,
`errors`, `runtime`, `bench_points`, `requests`, `gpu_samples`, `http_after_fatal`, and the
findings of the rules run now on this run. Nothing is stored. Every quoted line goes through
`forensics.redact.redact` first.
"""
from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any, Sequence

from forensics.model import REQUESTED_TO_EFFECTIVE
from forensics.archive import Connection, query
from forensics.errors import ForensicsError
from forensics.model import Finding, severity_rank
from forensics.redact import redact
from forensics.report.model import Chart, Para, Quote, Report, Section, Table
from forensics.rules import Rule, find_rule, run_rules

CONTEXT_LINES = 2
MAX_RAW = 220
MAX_EVIDENCE = 6
THROTTLE_REASONS = ("hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake", "sw_power_cap")

PAIRS = REQUESTED_TO_EFFECTIVE

# Launch milestones: (label, effective fact names that prove it, in order of preference).
MILESTONES = [
    ("weights loaded", ("weights_load_s", "weights_gib", "weights_read_s")),
    ("KV cache allocated", ("kv_cache_gib", "kv_cache_tokens", "gpu_blocks", "k_size_gib", "kv_size_gib",
                            "max_total_num_tokens")),
    ("CUDA graphs captured", ("cuda_graph_s", "cuda_graph_gib", "cuda_graph_max_bs")),
]


class ReportError(ForensicsError):
    """A report cannot be built (unknown run id, empty archive)."""


def _rows(con: Connection, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    names, rows = query(con, sql, params)
    return [dict(zip(names, r)) for r in rows]


def fmt_value(v: Any, unit: str | None = None) -> str:
    """A number without float noise (12.0 -> 12, 0.123456 -> 0.1235), a string as is."""
    if v is None:
        return ""
    if isinstance(v, bool):
        text = str(v).lower()
    elif isinstance(v, float):
        if v != v:
            text = "nan"
        elif v in (float("inf"), float("-inf")):
            text = "inf" if v > 0 else "-inf"
        elif v == int(v) and abs(v) < 1e15:
            text = str(int(v))
        else:
            text = f"{v:.4g}" if abs(v) < 1e4 else f"{v:.0f}"
    else:
        text = str(v)
    if unit and unit not in ("name", "messages", "bool", "count", "requests", "tokens", "blocks"):
        text += f" {unit}"
    elif unit in ("tokens", "requests", "blocks") and text:
        text += f" {unit}"
    return text


def short(text: str | None, width: int = MAX_RAW) -> str:
    t = redact(text or "") or ""
    t = t.replace("\t", " ").rstrip()
    return t if len(t) <= width else t[: width - 1] + "…"


def _fact_value(row: dict[str, Any]) -> Any:
    if row.get("value_num") is not None:
        return row["value_num"]
    if row.get("value_text") is not None:
        return row["value_text"]
    j = row.get("value_json")
    return None if j in (None, "null") else j


class RunFiles:
    """Reads a run's files by their archive label (`RUN_ID/relpath`) from the run folder, if present."""

    def __init__(self, run_id: str, run_dir: Path | None, kinds: dict[str, str]) -> None:
        self.run_id, self.run_dir, self.kinds = run_id, run_dir, kinds
        self._cache: dict[str, list[str] | None] = {}

    def lines(self, label: str | None) -> list[str] | None:
        if not label or self.run_dir is None:
            return None
        if label in self._cache:
            return self._cache[label]
        rel = label.split("/", 1)[1] if label.startswith(self.run_id + "/") else label
        p = self.run_dir / rel
        out: list[str] | None = None
        try:
            if p.is_file() and self.kinds.get(label, "log") in ("log", "command"):
                raw = p.read_bytes()
                if raw[:2] == b"\x1f\x8b":
                    raw = gzip.decompress(raw)
                out = raw.decode("utf-8", "replace").splitlines()
        except (OSError, EOFError):
            out = None
        self._cache[label] = out
        return out

    def line(self, label: str | None, n: int | None) -> str | None:
        lines = self.lines(label)
        if lines is None or n is None or not 1 <= n <= len(lines):
            return None
        return lines[n - 1]

    def quote(self, label: str, n: int | None, raw: str | None) -> Quote:
        lines = self.lines(label)
        if lines is not None and n is not None and 1 <= n <= len(lines):
            lo, hi = max(1, n - CONTEXT_LINES), min(len(lines), n + CONTEXT_LINES)
            return Quote(f"{label}:{n}", [(i, short(lines[i - 1]), i == n) for i in range(lo, hi + 1)])
        where = f"{label}:{n}" if n is not None else label
        return Quote(where, [(n, short(raw), True)])


# ------------------------------------------------------------------------------------ verdict

def describe_error(err: dict[str, Any] | None) -> str:
    """`Type on RANK: message` for a row of the errors table."""
    if not err:
        return "no fatal error in the log"
    msg = (err.get("message") or "").strip().rstrip(".")
    if err.get("type"):
        head = err["type"] + (f" on {err['rank']}" if err.get("rank") else "") + (f": {msg}" if msg else "")
    else:
        head = (msg or "fatal error") + (f" (on {err['rank']})" if err.get("rank") else "")
    return short(head, 200)


def top_finding(findings: Sequence[Finding]) -> Finding | None:
    ordered = sorted(findings, key=lambda f: (-severity_rank(f.severity), f.rule))
    return ordered[0] if ordered else None


def make_verdict(outcome: str | None, root: dict[str, Any] | None, findings: Sequence[Finding]) -> str:
    """One sentence: outcome, root error and the most severe finding."""
    top = top_finding([f for f in findings if f.rule not in ("startup.failed", "engine.died_after_ready")])
    dead = next((f for f in findings if f.rule == "engine.dead_but_serving"), None)
    tail = f"; top finding {top.rule}: {short(top.message, 160)}" if top and top is not dead else ""
    if outcome == "failed_startup":
        text = f"never became ready: {describe_error(root)}{tail}"
    elif outcome == "crashed_after_ready":
        if dead is not None:
            text = f"died after it was ready but kept serving ({short(dead.message, 120)}): {describe_error(root)}"
        else:
            text = f"crashed after it was ready: {describe_error(root)}{tail}"
    elif outcome == "ready":
        if top is not None and severity_rank(top.severity) >= severity_rank("warning"):
            text = f"ready, but {top.severity} {top.rule}: {short(top.message, 160)}"
        else:
            text = "ready; no finding at warning or above"
    else:
        text = "outcome unknown: the log shows neither a ready server nor a startup failure"
        if root:
            text += f"; fatal error: {describe_error(root)}"
        text += tail
    text = text if text.endswith("…") else text.rstrip(".") + "."
    return text[0].upper() + text[1:]


# ------------------------------------------------------------------------------------ sections

def _timeline(run: dict[str, Any], facts: list[dict[str, Any]], root: dict[str, Any] | None,
              runtime: list[dict[str, Any]], files: RunFiles) -> Section:
    log = run.get("log_file")
    eff = [f for f in facts if f["section"] == "effective" and (log is None or f["file"] == log)]
    rows: list[tuple[int, list[str]]] = []
    for label, names in MILESTONES:
        cands = [f for n in names for f in eff if f["name"] == n]
        if not cands:
            continue
        first = min(cands, key=lambda f: (f["line"] or 0))
        vals = ", ".join(f"{f['name']}={fmt_value(_fact_value(f), f['unit'])}"
                         for f in sorted(cands, key=lambda f: names.index(f["name"]))
                         if f["line"] == first["line"])
        rows.append((first["line"] or 0, [label, str(first["line"]), first.get("rank") or "", vals, short(first["raw"])]))
    if run.get("ready_line"):
        raw = files.line(log, run["ready_line"]) or "(first ready or serving evidence; log not available)"
        rows.append((run["ready_line"], ["ready", str(run["ready_line"]), "", "", short(raw)]))
    if runtime:
        first = next((r for r in runtime if (r.get("running") or 0) > 0), runtime[0])
        rows.append((first["line"], ["first load", str(first["line"]), first.get("rank") or "",
                     f"running={fmt_value(first.get('running'))}, waiting={fmt_value(first.get('waiting'))}",
                     short(files.line(first["file"], first["line"]) or "")]))
        peak = max(runtime, key=lambda r: ((r.get("running") or 0), -(r["line"] or 0)))
        if peak is not first:
            rows.append((peak["line"], ["peak load", str(peak["line"]), peak.get("rank") or "",
                         f"running={fmt_value(peak.get('running'))}, waiting={fmt_value(peak.get('waiting'))}",
                         short(files.line(peak["file"], peak["line"]) or "")]))
    if root:
        rows.append((root["line"] or 0, ["fatal error", str(root["line"]), root.get("rank") or "",
                     short(f"{root.get('type') or ''}", 80), short(root["raw"])]))
    rows.sort(key=lambda t: t[0])
    sec = Section("Launch timeline")
    if rows:
        sec.blocks.append(Table(["event", "line", "rank", "values", "log line"], [r for _, r in rows],
                                marks={i for i, (_, r) in enumerate(rows) if r[0] == "fatal error"}))
    else:
        sec.blocks.append(Para("No launch milestone in the log."))
    return sec


def _same(a: Any, b: Any) -> bool:
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a).strip().lower() == str(b).strip().lower()


def _first_by(facts: list[dict[str, Any]], section: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    rows = [f for f in facts if f["section"] == section]
    rows.sort(key=lambda f: (not (f["file"] or "").endswith("/cmd.sh"), f["line"] or 0))
    for f in rows:
        out.setdefault(f["name"], f)
    return out


def requested_vs_effective(facts: list[dict[str, Any]]) -> Table:
    """Requested arguments beside the effective values they became; mismatches marked `≠`."""
    req, eff = _first_by(facts, "requested"), _first_by(facts, "effective")
    rows: list[list[str]] = []
    marks: set[int] = set()
    used_r: set[str] = set()
    used_e: set[str] = set()
    for rk, ek in PAIRS:
        r, e = req.get(rk), eff.get(ek)
        if r is None:
            continue
        used_r.add(rk)
        mark = ""
        if e is not None:
            used_e.add(ek)
            if _fact_value(r) is not None and _fact_value(e) is not None and not _same(_fact_value(r), _fact_value(e)):
                mark = "≠"
                marks.add(len(rows))
        rows.append([rk, short(fmt_value(_fact_value(r)), 60), f"{r['file']}:{r['line']}", mark,
                     ek if e else "", short(fmt_value(_fact_value(e), e["unit"]), 60) if e else "",
                     f"{e['file']}:{e['line']}" if e else ""])
    for k in sorted(set(req) - used_r):
        r = req[k]
        rows.append([k, short(fmt_value(_fact_value(r)), 60), f"{r['file']}:{r['line']}", "", "", "", ""])
    for k in sorted(set(eff) - used_e):
        e = eff[k]
        rows.append(["", "", "", "", k, short(fmt_value(_fact_value(e), e["unit"]), 60), f"{e['file']}:{e['line']}"])
    return Table(["requested", "value", "from", "", "effective", "value", "from"], rows, marks)


def _findings_section(findings: Sequence[Finding], rules: Sequence[Rule], files: RunFiles) -> Section:
    sec = Section("Findings")
    if not findings:
        sec.blocks.append(Para("No rule fired on this run."))
        return sec
    for f in sorted(findings, key=lambda f: (-severity_rank(f.severity), f.rule)):
        sec.blocks.append(Para(f"{f.severity.upper()} {f.rule}: {short(f.message, 400)}"))
        rule = find_rule(rules, f.rule)
        for ev in f.evidence[:MAX_EVIDENCE]:
            sec.blocks.append(files.quote(ev.file, ev.line, ev.raw))
        if len(f.evidence) > MAX_EVIDENCE:
            sec.blocks.append(Para(f"(+{len(f.evidence) - MAX_EVIDENCE} more evidence rows)"))
        if rule is not None:
            sec.blocks.append(Para(f"Remedy: {rule.remedy}"))
    return sec


def _setting(con: Connection, key: str, default: float) -> float:
    rows = _rows(con, "SELECT value FROM rule_settings WHERE key = ?", [key])
    return float(rows[0]["value"]) if rows and rows[0]["value"] is not None else default


def _median(xs: list[float]) -> float | None:
    xs = sorted(xs)
    if not xs:
        return None
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def _bench_section(con: Connection, run_id: str, facts: list[dict[str, Any]]) -> Section:
    sec = Section("Benchmark points")
    points = _rows(con, "SELECT * FROM bench_points WHERE run_id = ? ORDER BY source_file, point_index", [run_id])
    eff = _first_by(facts, "effective")
    req = _first_by(facts, "requested")
    cap = _fact_value(eff["max_running_requests"]) if "max_running_requests" in eff else None
    state = _fact_value(eff["state_slots"]) if "state_slots" in eff else None
    kv = _fact_value(eff["kv_cache_tokens"]) if "kv_cache_tokens" in eff else None
    dp = next((_fact_value(d[n]) for d in (eff, req) for n in ("data_parallel_size", "dp_size") if n in d), None) or 1
    asked = next((_fact_value(req[n]) for n in ("max_num_seqs", "max_running_requests") if n in req), None)
    limits = []
    if asked is not None:
        limits.append(f"requested running cap {fmt_value(asked)}")
    if cap is not None:
        limits.append(f"effective running cap {fmt_value(cap)}" + (f" x {fmt_value(dp)} replicas" if dp != 1 else ""))
    if state is not None:
        limits.append(f"state slots {fmt_value(state)}")
    if kv is not None:
        limits.append(f"KV pool {fmt_value(kv)} tokens" + (f" x {fmt_value(dp)} replicas" if dp != 1 else ""))
    if limits:
        sec.blocks.append(Para("Engine limits: " + "; ".join(limits) + "."))
    if not points:
        sec.blocks.append(Para("No benchmark results in this run."))
    else:
        slots = None
        if cap is not None or state is not None:
            slots = min(x for x in (cap, state) if x is not None) * dp
        rows, marks = [], set()
        for p in points:
            tpr = None
            if p.get("random_input_len") and p.get("random_output_len"):
                tpr = p["random_input_len"] + p["random_output_len"]
            elif p.get("completed") and p.get("total_input_tokens") is not None and p.get("total_output_tokens") is not None:
                tpr = (p["total_input_tokens"] + p["total_output_tokens"]) / p["completed"]
            fits = int(kv * dp // tpr) if kv and tpr else None
            conc = p.get("max_concurrency")
            load = fmt_value(conc) if conc is not None else (
                "rate inf" if p.get("request_rate_inf") else (f"rate {fmt_value(p.get('request_rate'))}/s" if p.get("request_rate") is not None else "?"))
            over = []
            if conc is not None and slots is not None and conc > slots:
                over.append("over slots")
            if conc is not None and fits is not None and conc > fits:
                over.append("over KV")
            if over:
                marks.add(len(rows))
            rows.append([f"{p['source_file'].rsplit('/', 1)[-1]}#{p['point_index']}", p.get("tool") or "", load,
                         fmt_value(slots) if slots is not None else "", fmt_value(fits) if fits is not None else "",
                         ", ".join(over), fmt_value(p.get("completed")), fmt_value(p.get("failed")),
                         fmt_value(round(p["median_ttft_ms"], 1)) if p.get("median_ttft_ms") is not None else "",
                         fmt_value(round(p["output_throughput"], 1)) if p.get("output_throughput") is not None else ""])
        sec.blocks.append(Table(["point", "tool", "concurrency", "effective slots", "KV fits (requests)", "over",
                                 "completed", "failed", "median TTFT ms", "output tok/s"], rows, marks))
    reqs = _rows(con, "SELECT source_file, point_index, input_tokens, output_tokens, ttft_ms, success, error, finish_reason "
                      "FROM requests WHERE run_id = ? ORDER BY source_file, point_index, request_index", [run_id])
    if reqs:
        ceiling = _setting(con, "prefix_cache_ceiling_tps", 60000.0)
        frac = _setting(con, "truncated_fraction", 0.5)
        out_len = {(p["source_file"], p["point_index"]): p.get("random_output_len") for p in points}
        groups: dict[tuple[str, Any], list[dict[str, Any]]] = {}
        for r in reqs:
            groups.setdefault((r["source_file"], r["point_index"]), []).append(r)
        rows = []
        for (src, idx), rs in groups.items():
            ok = [r for r in rs if r["success"] is not False and not r.get("error")]
            failed = len(rs) - len(ok)
            want = out_len.get((src, idx))
            trunc = sum(1 for r in ok if r.get("output_tokens") is not None and (
                r["output_tokens"] == 0 or (want and r["output_tokens"] < frac * want and r.get("finish_reason") != "stop")))
            timed = [r for r in ok if r.get("ttft_ms") and r["ttft_ms"] > 0]
            hits = [r for r in timed if r.get("input_tokens") and r["input_tokens"] / (r["ttft_ms"] / 1000.0) > ceiling]
            cold = [r["ttft_ms"] for r in timed if r not in hits]
            m_all, m_cold = _median([r["ttft_ms"] for r in timed]), _median(cold)
            rows.append([f"{src.rsplit('/', 1)[-1]}#{fmt_value(idx)}", str(len(rs)), str(failed), str(trunc), str(len(hits)),
                         fmt_value(round(m_all, 1)) if m_all is not None else "",
                         fmt_value(round(m_cold, 1)) if m_cold is not None else ""])
        sec.blocks.append(Para(f"Requests per point (cache hit: input_tokens / TTFT above {fmt_value(ceiling)} tokens/s; "
                               f"truncated: no output or under {fmt_value(frac)} of the requested length without a stop)."))
        sec.blocks.append(Table(["point", "requests", "failed", "truncated", "suspected cache hits",
                                 "median TTFT ms (all)", "median TTFT ms (without hits)"], rows))
    return sec


def _reasons(s: dict[str, Any]) -> list[str]:
    return [r for r in THROTTLE_REASONS if s.get(f"reason_{r}")]


def _gpu_section(con: Connection, run_id: str) -> tuple[Section, list[dict[str, Any]]]:
    sec = Section("GPU state per benchmark window")
    samples = _rows(con, "SELECT * FROM gpu_samples WHERE run_id = ? ORDER BY ts_utc NULLS LAST, line, gpu_index", [run_id])
    if not samples:
        sec.blocks.append(Para("No GPU telemetry in this run."))
        return sec, samples
    wins = _rows(con, "SELECT source_file, point_index, ts_end_utc - duration_s AS t0, ts_end_utc AS t1 FROM bench_points "
                      "WHERE run_id = ? AND ts_end_utc IS NOT NULL AND duration_s > 0 ORDER BY t0", [run_id])

    def row(name: str, ss: list[dict[str, Any]]) -> list[str]:
        temps = [s["temperature_c"] for s in ss if s.get("temperature_c") is not None]
        clocks = [s["sm_clock_mhz"] for s in ss if s.get("sm_clock_mhz") is not None]
        reasons = sorted({r for s in ss for r in _reasons(s)})
        gpus = sorted({s["gpu_index"] for s in ss if s.get("gpu_index") is not None})
        return [name, str(len(ss)), ",".join(str(g) for g in gpus),
                fmt_value(max(temps)) if temps else "",
                f"{fmt_value(min(clocks))}-{fmt_value(max(clocks))}" if clocks else "",
                ", ".join(reasons) or "none"]

    rows, marks = [], set()
    for w in wins:
        ss = [s for s in samples if s.get("ts_utc") is not None and w["t0"] <= s["ts_utc"] <= w["t1"]]
        if ss:
            r = row(f"{w['source_file'].rsplit('/', 1)[-1]}#{w['point_index']}", ss)
            if r[-1] != "none":
                marks.add(len(rows))
            rows.append(r)
    if not rows:
        why = "no benchmark window has a known time" if not wins else "no sample falls inside a benchmark window"
        sec.blocks.append(Para(f"All samples of the run ({why})."))
        r = row("all samples", samples)
        if r[-1] != "none":
            marks.add(0)
        rows.append(r)
    sec.blocks.append(Table(["window", "samples", "GPUs", "max temp C", "SM clock MHz", "slowdown reasons"], rows, marks))
    return sec, samples


def _runtime_chart(runtime: list[dict[str, Any]], root: dict[str, Any] | None, ready_line: int | None) -> Chart:
    pts = [{"x": r["line"], "running": r.get("running"), "waiting": r.get("waiting"),
            "kv": r["kv_usage_pct"] if r.get("kv_usage_pct") is not None else (
                r["token_usage"] * 100 if r.get("token_usage") is not None else None)} for r in runtime]
    fatal = root["line"] if root and runtime and root.get("file") == runtime[0]["file"] else None
    peak = max((p["running"] or 0 for p in pts), default=0)
    summary = (f"{len(pts)} stats lines, peak running {fmt_value(peak)}"
               + (f", fatal error at line {fatal}" if fatal else "")) if pts else "no periodic stats lines in the log"
    return Chart("runtime", {"points": pts, "fatal_line": fatal, "ready_line": ready_line}, summary)


def _gpu_chart(samples: list[dict[str, Any]]) -> Chart:
    have_ts = any(s.get("ts_utc") is not None for s in samples)
    t0 = min((s["ts_utc"] for s in samples if s.get("ts_utc") is not None), default=0.0)
    series: dict[str, list[dict[str, Any]]] = {}
    for i, s in enumerate(samples):
        x = (s["ts_utc"] - t0) if have_ts and s.get("ts_utc") is not None else float(s.get("line") or i)
        key = f"gpu {s.get('gpu_index')}" + (f":{s['mig_index']}" if s.get("mig_index") is not None else "")
        series.setdefault(key, []).append({"x": x, "temp": s.get("temperature_c"), "clock": s.get("sm_clock_mhz"),
                                           "throttled": bool(_reasons(s))})
    n_thr = sum(1 for ss in series.values() for p in ss if p["throttled"])
    summary = f"{len(samples)} samples of {len(series)} GPU(s), {n_thr} throttled"
    return Chart("gpu", {"series": series, "x_label": "seconds" if have_ts else "sample"}, summary)


# ------------------------------------------------------------------------------------ entry

def resolve_run_dir(run: dict[str, Any]) -> Path | None:
    p = run.get("path")
    if not p or "!" in p:  # tar members are not on disk
        return None
    d = Path(p)
    return d if d.is_dir() else None


def build_report(con: Connection, run_id: str, rules: Sequence[Rule], run_dir: Path | None = None,
                 findings: Sequence[Finding] | None = None) -> Report:
    """Build the diagnosis of one run.

    Args:
        con: the archive (read-only is enough).
        run_id: a run in `runs`.
        rules: from `forensics.rules.load_rules`; run now on this run unless `findings` is given.
        run_dir: the run folder, for context lines (default: `runs.path` when it is a folder).
        findings: precomputed findings (tests, diff).

    Raises:
        ReportError: the run is not in the archive.
    """
    runs = _rows(con, "SELECT * FROM runs WHERE run_id = ?", [run_id])
    if not runs:
        known = [r["run_id"] for r in _rows(con, "SELECT run_id FROM runs ORDER BY run_id LIMIT 5")]
        raise ReportError(f"no run `{run_id}` in the archive",
                          f"known runs: {', '.join(known)}" if known else "the archive holds no runs",
                          hint="list them with `forensics runs`, or pass the run folder")
    run = runs[0]
    facts = _rows(con, "SELECT * FROM facts WHERE run_id = ? ORDER BY file, line, name", [run_id])
    errors = _rows(con, "SELECT * FROM errors WHERE run_id = ? ORDER BY ordinal", [run_id])
    root = errors[0] if errors else None
    runtime = _rows(con, "SELECT * FROM runtime WHERE run_id = ? AND (file = ? OR ? IS NULL) ORDER BY line",
                    [run_id, run.get("log_file"), run.get("log_file")])
    kinds = {r["path"]: r["kind"] for r in _rows(con, "SELECT path, kind FROM files WHERE run_id = ?", [run_id])}
    files = RunFiles(run_id, run_dir if run_dir is not None else resolve_run_dir(run), kinds)
    if findings is None:
        findings = run_rules(con, rules, runs=[run_id])
    findings = sorted(findings, key=lambda f: (-severity_rank(f.severity), f.rule))

    header = [("run", run_id), ("engine", " ".join(x for x in (run.get("engine"), run.get("engine_version")) if x) or "unknown"),
              ("model", run.get("model") or "unknown"), ("outcome", run.get("outcome") or "unknown"),
              ("log", run.get("log_file") or "none"),
              ("files", ", ".join(f"{k.split('/', 1)[-1]} ({v})" for k, v in sorted(kinds.items())) or "none")]
    if root:
        header.append(("root error", f"{describe_error(root)} (line {root['line']})"))
    sections = [_timeline(run, facts, root, runtime, files)]
    rt = Section("Running, waiting and KV usage")
    rt.blocks.append(_runtime_chart(runtime, root, run.get("ready_line")))
    sections.append(rt)
    rve = Section("Requested vs effective")
    table = requested_vs_effective(facts)
    rve.blocks.append(table if table.rows else Para("No requested or effective configuration found."))
    sections.append(rve)
    sections.append(_findings_section(findings, rules, files))
    sections.append(_bench_section(con, run_id, facts))
    gsec, samples = _gpu_section(con, run_id)
    if samples:
        gsec.blocks.append(_gpu_chart(samples))
    sections.append(gsec)
    return Report(run_id=run_id, verdict=make_verdict(run.get("outcome"), root, findings), header=header,
                  sections=sections, outcome=run.get("outcome"))
