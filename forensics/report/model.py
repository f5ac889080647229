"""The report as plain blocks (paragraphs, tables, quotes, charts) that every renderer walks."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Para:
    """A paragraph of plain text (renderers escape it)."""

    text: str


@dataclass
class Table:
    """A table; `marks` holds the indexes of rows to highlight (mismatches, points over a cap)."""

    headers: list[str]
    rows: list[list[str]]
    marks: set[int] = field(default_factory=set)


@dataclass
class Quote:
    """Lines quoted from a run file: (line number or None, text, is the evidence line itself)."""

    source: str
    lines: list[tuple[int | None, str, bool]]


@dataclass
class Chart:
    """Data for an inline SVG chart; `kind` is `runtime` or `gpu`; `summary` is its text form."""

    kind: str
    data: dict[str, Any]
    summary: str


@dataclass
class Section:
    title: str
    blocks: list[Any] = field(default_factory=list)


@dataclass
class Report:
    """One run's diagnosis: a one-sentence verdict, a header and sections."""

    run_id: str
    verdict: str
    header: list[tuple[str, str]]
    sections: list[Section]
    outcome: str | None = None
