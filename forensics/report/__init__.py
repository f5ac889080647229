"""Diagnosis reports (`forensics report`) and run comparisons (`forensics diff`)."""
from __future__ import annotations

from forensics.report.build import build_report
from forensics.report.html import render_html
from forensics.report.markdown import render_markdown

__all__ = ["build_report", "render_html", "render_markdown"]
