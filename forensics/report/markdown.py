"""Render a report (or any list of sections) as GitHub-flavoured Markdown; strings only."""
from __future__ import annotations

from typing import Sequence

from forensics.report.model import Chart, Para, Quote, Report, Section, Table


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def table_md(t: Table) -> str:
    heads = list(t.headers)
    rows = [[("**" + c + "**" if i in t.marks and c else c) for c in r] for i, r in enumerate(t.rows)]
    out = ["| " + " | ".join(_cell(h) for h in heads) + " |", "|" + "|".join("---" for _ in heads) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def quote_md(q: Quote) -> str:
    width = max((len(str(n)) for n, _, _ in q.lines if n is not None), default=1)
    body = [f"{'>' if hit else ' '} {str(n).rjust(width) if n is not None else ' ' * width}  {text}"
            for n, text, hit in q.lines]
    fence = "````" if any("```" in t for _, t, _ in q.lines) else "```"
    return "\n".join([f"`{q.source}`", "", fence, *body, fence])


def sections_md(sections: Sequence[Section], level: int = 2) -> list[str]:
    out: list[str] = []
    for s in sections:
        out += [f"{'#' * level} {s.title}", ""]
        for b in s.blocks:
            if isinstance(b, Para):
                out.append(b.text)
            elif isinstance(b, Table):
                out.append(table_md(b))
            elif isinstance(b, Quote):
                out.append(quote_md(b))
            elif isinstance(b, Chart):
                out.append(f"_Chart ({b.kind}, in the HTML report): {b.summary}._")
            out.append("")
    return out


def render_markdown(report: Report) -> str:
    """The report as Markdown: verdict first, then the header and every section."""
    out = [f"# Diagnosis: {report.run_id}", "", f"**Verdict:** {report.verdict}", ""]
    out += [f"- {k}: {v}" for k, v in report.header]
    out.append("")
    out += sections_md(report.sections)
    return "\n".join(out).rstrip("\n") + "\n"
