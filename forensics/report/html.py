"""Render a report as one self-contained HTML file: inline CSS and SVG, no script, no network."""
from __future__ import annotations

from html import escape

from forensics.report.charts import chart_svg
from forensics.report.model import Chart, Para, Quote, Report, Table

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;color:#222}
h1{font-size:22px} h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}
.verdict{font-size:16px;padding:10px 14px;border-left:5px solid #c00;background:#fff4f4}
.verdict.ok{border-color:#2a2;background:#f3fff3}
table{border-collapse:collapse;font-size:12px;margin:8px 0} th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3} tr.mark td{background:#fff0d0;font-weight:600}
pre{background:#f7f7f7;border:1px solid #ddd;padding:6px;font-size:12px;overflow-x:auto;margin:4px 0 10px}
pre .hit{background:#ffe08a;display:block} .src{font-family:monospace;font-size:12px;color:#555}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 12px;font-size:13px} dt{font-weight:600}
.finding{font-weight:600;margin-top:14px} svg.chart{border:1px solid #eee;max-width:100%;height:auto}
@media print{body{max-width:none} pre{white-space:pre-wrap}}
"""


def _table(t: Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in t.headers)
    mark = ' class="mark"'
    rows = "".join(f"<tr{mark if i in t.marks else ''}>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>"
                   for i, r in enumerate(t.rows))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _quote(q: Quote) -> str:
    width = max((len(str(n)) for n, _, _ in q.lines if n is not None), default=1)
    lines = []
    for n, text, hit in q.lines:
        num = str(n).rjust(width) if n is not None else " " * width
        body = escape(f"{num}  {text}")
        lines.append(f'<span class="hit">{body}</span>' if hit else body + "\n")
    return f'<div class="src">{escape(q.source)}</div><pre>{"".join(lines)}</pre>'


def render_html(report: Report) -> str:
    """The report as a standalone HTML page (charts as inline SVG)."""
    ok = report.outcome == "ready" and report.verdict.startswith("Ready;")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>Diagnosis: {escape(report.run_id)}</title>",
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<style>{CSS}</style></head><body>",
           f"<h1>Diagnosis: {escape(report.run_id)}</h1>",
           f'<p class="verdict{" ok" if ok else ""}"><strong>Verdict:</strong> {escape(report.verdict)}</p>',
           "<dl>" + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in report.header) + "</dl>"]
    for s in report.sections:
        out.append(f"<h2>{escape(s.title)}</h2>")
        for b in s.blocks:
            if isinstance(b, Para):
                cls = ' class="finding"' if b.text.split(" ", 1)[0] in ("INFO", "WARNING", "ERROR", "CRITICAL") else ""
                out.append(f"<p{cls}>{escape(b.text)}</p>")
            elif isinstance(b, Table):
                out.append(_table(b))
            elif isinstance(b, Quote):
                out.append(_quote(b))
            elif isinstance(b, Chart):
                svg = chart_svg(b.kind, b.data)
                out.append(f"<figure>{svg}<figcaption>{escape(b.summary)}</figcaption></figure>" if svg
                           else f"<p>{escape(b.summary)}</p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
