"""Importers for benchmark results, GPU telemetry and quality probes: detect by content, read to rows.

Each importer module has `TOOL`, `NAME_HINTS`, `sniff(head, name) -> bool` (content only) and
`read(data, source) -> ImportResult`. `detect` asks every importer; when several claim a file,
the file name breaks the tie. Readers never raise on bad content: they return `problems`.
"""
from __future__ import annotations

from types import ModuleType

from . import aiperf, dcgm, guidellm, llmperf, nvidia_smi, probes, sglang_bench, vllm_bench
from .base import (BENCH_COLUMNS, GPU_COLUMNS, PROBE_COLUMNS, PROBLEM_KEYS, REASON_BITS,
                   REQUEST_COLUMNS, TABLE_COLUMNS, ImportResult)

HEAD_BYTES = 64 * 1024  # how much of a file `detect` should be given

# Order matters only when the name gives no tie-break: specific formats first, probes last.
IMPORTERS: tuple[ModuleType, ...] = (
    vllm_bench, sglang_bench, guidellm, aiperf, llmperf, nvidia_smi, dcgm, probes,
)


def detect(head: bytes, name: str = "") -> ModuleType | None:
    """The importer module for a file whose first bytes are `head`, or None."""
    hits = []
    for imp in IMPORTERS:
        try:
            if imp.sniff(head, name):
                hits.append(imp)
        except Exception:  # noqa: BLE001 - a sniffer must never break detection
            continue
    if len(hits) > 1:
        named = [imp for imp in hits if imp.NAME_HINTS.search(name or "")]
        if named:
            return named[0]
    return hits[0] if hits else None


def import_bytes(data: bytes, source: str, name: str | None = None) -> ImportResult | None:
    """Detect and read `data` in one step; None when no importer recognises it."""
    imp = detect(data[:HEAD_BYTES], name if name is not None else source)
    return imp.read(data, source) if imp else None


def by_tool(tool: str) -> ModuleType:
    """The importer module whose TOOL is `tool` (KeyError otherwise)."""
    for imp in IMPORTERS:
        if imp.TOOL == tool:
            return imp
    raise KeyError(tool)


__all__ = [
    "BENCH_COLUMNS", "GPU_COLUMNS", "HEAD_BYTES", "IMPORTERS", "PROBE_COLUMNS", "PROBLEM_KEYS",
    "REASON_BITS", "REQUEST_COLUMNS", "TABLE_COLUMNS", "ImportResult", "by_tool", "detect",
    "import_bytes",
]
