"""Turns scan results into JSON, a table or markdown; strings only, no I/O."""
from __future__ import annotations

import json
from typing import Any

from forensics.model import REQUESTED_TO_EFFECTIVE
from forensics.scan import ScanResult

SCAN_SCHEMA = "forensics.scan/1"


def scan_dict(res: ScanResult) -> dict[str, Any]:
    """The `forensics scan --format json` document (see docs/facts.md), secrets redacted."""
    from forensics.redact import redact_tree, redact_value

    doc = _scan_dict(res)
    for name, fact in doc["requested"].items():
        fact["value"] = redact_value(name, fact["value"])
    return redact_tree(doc)  # type: ignore[return-value]


def _scan_dict(res: ScanResult) -> dict[str, Any]:
    return {
        "schema": SCAN_SCHEMA,
        "source": res.source,
        "engine": res.engine,
        "engine_version": res.engine_version.value if res.engine_version else None,
        "model": res.model.value if res.model else None,
        "outcome": res.outcome,
        "requested": {k: f.as_dict() for k, f in sorted(res.requested.items())},
        "effective": {k: f.as_dict() for k, f in sorted(res.effective.items())},
        "runtime": {k: f.as_dict() for k, f in sorted(res.runtime.items())},
        "errors": [e.as_dict() for e in res.errors],
        "findings": [f.as_dict() for f in res.findings],
    }


def scan_json(res: ScanResult) -> str:
    return json.dumps(scan_dict(res), indent=2, ensure_ascii=False, default=str)


PAIRS = REQUESTED_TO_EFFECTIVE


def _short(value: Any, width: int = 60) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else value
    return text if len(text) <= width else text[: width - 1] + "…"


def _secret_safe(name: str, value: Any) -> Any:
    from forensics.redact import redact_value

    return redact_value(name, value)


def comparison_rows(res: ScanResult) -> list[list[str]]:
    rows: list[list[str]] = []
    used_req: set[str] = set()
    used_eff: set[str] = set()
    for rk, ek in PAIRS:
        r, e = res.requested.get(rk), res.effective.get(ek)
        if r is None or ek in used_eff and e is not None:
            continue
        used_req.add(rk)
        if e is not None:
            used_eff.add(ek)
        mark = ""
        if e is not None and r.value is not None and r.value != e.value:
            mark = "≠"
        rows.append([rk, _short(_secret_safe(rk, r.value)), f"{r.evidence.file}:{r.evidence.line}", ek if e else "",
                     _short(e.value) if e else "", f"{e.evidence.line}" if e else "", mark])
    for k, e in sorted(res.effective.items()):
        if k in used_eff:
            continue
        unit = f" {e.unit}" if e.unit and e.unit not in ("name", "messages") else ""
        rows.append(["", "", "", k, _short(e.value) + unit, str(e.evidence.line) + (f" [{e.rank}]" if e.rank else ""), ""])
    for k, r in sorted(res.requested.items()):
        if k in used_req:
            continue
        rows.append([k, _short(_secret_safe(k, r.value)), f"{r.evidence.file}:{r.evidence.line}", "", "", "", ""])
    return rows


def _header(res: ScanResult) -> list[tuple[str, str]]:
    items = [("source", res.source), ("engine", res.engine or "unknown")]
    if res.engine_version:
        items.append(("version", str(res.engine_version.value)))
    if res.model:
        items.append(("model", str(res.model.value)))
    items.append(("outcome", res.outcome))
    for k, f in sorted(res.runtime.items()):
        items.append((k, f"{f.value} (line {f.evidence.line})"))
    return items


def scan_table(res: ScanResult, fmt: str = "simple") -> str:
    from tabulate import tabulate

    out = [tabulate(_header(res), tablefmt="plain")]
    rows = comparison_rows(res)
    if rows:
        out.append("")
        out.append(tabulate(rows, headers=["requested", "value", "evidence", "effective", "value", "line", ""], tablefmt=fmt))
    if res.errors:
        out.append("")
        out.append("errors (root cause first):")
        for e in res.errors:
            rank = f" [{e.rank}]" if e.rank else ""
            out.append(f"  line {e.evidence.line}{rank}: {e.type or ''}{': ' if e.type and e.message else ''}{e.message or ''}")
    if res.findings:
        out.append("")
        out.append("findings:")
        for f in res.findings:
            lines = ", ".join(f"{ev.file}:{ev.line}" for ev in f.evidence)
            out.append(f"  {f.severity:<8} {f.rule}: {f.message}  ({lines})")
    from forensics.redact import redact

    return (redact("\n".join(out)) or "") + "\n"


def scan_markdown(res: ScanResult) -> str:
    from tabulate import tabulate

    out = [f"# forensics scan: `{res.source}`", ""]
    out.append(tabulate(_header(res), headers=["", ""], tablefmt="github"))
    rows = comparison_rows(res)
    if rows:
        out += ["", "## Requested vs effective", ""]
        out.append(tabulate(rows, headers=["requested", "value", "evidence", "effective", "value", "line", ""], tablefmt="github"))
    if res.errors:
        out += ["", "## Errors (root cause first)", ""]
        for e in res.errors:
            out.append(f"- line {e.evidence.line}{' [' + e.rank + ']' if e.rank else ''}: `{e.type or ''}` {e.message or ''}")
    if res.findings:
        out += ["", "## Findings", ""]
        for f in res.findings:
            out.append(f"- **{f.severity}** `{f.rule}`: {f.message}")
            for ev in f.evidence:
                out.append(f"  - `{ev.file}:{ev.line}`: `{ev.raw[:200]}`")
    from forensics.redact import redact

    return (redact("\n".join(out)) or "") + "\n"


def unmatched_text(groups: list) -> str:
    if not groups:
        return "no unmatched fact-like lines\n"
    lines = [f"{len(groups)} templates of fact-like lines that no pattern matched:"]
    for g in groups:
        lines.append(f"{g.count:>6}  line {g.first_line:<7} {g.template}")
        lines.append(f"        e.g. {g.example}")
    return "\n".join(lines) + "\n"


def unmatched_json(groups: list) -> str:
    return json.dumps([{"template": g.template, "count": g.count, "first_line": g.first_line,
                        "example": g.example} for g in groups], indent=2, ensure_ascii=False)
