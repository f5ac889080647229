"""Lines that look like facts but matched no pattern, grouped by a masked template.

When an engine release rewords a line, the pattern silently stops matching. This makes
the gap visible: every line that carries a number next to a word such as tokens, GiB,
blocks, cache, backend or took, and that no pattern matched, is masked (numbers, hex,
paths, quoted strings) and counted per template, Drain-style.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from forensics.parsing.envelope import split
from forensics.parsing.reader import open_log
from forensics.parsing.scanner import Scanner, iter_chunks
from forensics.parsing.spec import PatternSet, load_all

_FACTISH = re.compile(
    r"(?i)\b(?:tokens?|gib|gb|mib|mb|blocks?|cache|backend|kernel|took|elapsed|concurrency|max_\w+|"
    r"memory|mem|throughput|graph|running|queue|waiting|usage|seconds|secs)\b"
)
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_MASKS = [
    (re.compile(r"(['\"])(?:(?!\1).)*\1"), "<STR>"),
    (re.compile(r"(?:/[\w.@+-]+){2,}/?"), "<PATH>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b|\b[0-9a-f]{12,}\b"), "<HEX>"),
    (re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?"), "<N>"),
]
_NOISE = re.compile(r"(?i)it/s\]|\|\s*\d+/\d+ \[|HTTP/1\.1\"|^\s*File \"|Traceback")


@dataclass
class Template:
    template: str
    count: int
    first_line: int
    example: str


def mask(message: str) -> str:
    for rx, token in _MASKS:
        message = rx.sub(token, message)
    return message


def unmatched_templates(path: str | Path, patterns: PatternSet | None = None, limit: int = 200) -> list[Template]:
    """Templates of fact-like lines no pattern matched, most frequent first."""
    patterns = patterns or load_all()
    stream, _ = open_log(path)
    with stream:
        matched: set[int] = {hit.line for hit in Scanner(patterns).scan(stream)}
    stream, _ = open_log(path)
    groups: dict[str, Template] = {}
    line_no = 0
    with stream:
        for chunk in iter_chunks(stream, 4 << 20):
            for raw in chunk.split(b"\n"):
                line_no += 1
                if line_no in matched or not raw.strip():
                    continue
                text = raw.decode("utf-8", "replace")
                for seg in text.split("\r"):
                    msg = split(seg).message
                    if not msg or not _NUMBER.search(msg) or not _FACTISH.search(msg) or _NOISE.search(msg):
                        continue
                    tpl = mask(msg)[:300]
                    g = groups.get(tpl)
                    if g is None:
                        groups[tpl] = Template(tpl, 1, line_no, seg.strip()[:300])
                    else:
                        g.count += 1
            line_no -= 1  # the split leaves one piece after the chunk's last newline
    return sorted(groups.values(), key=lambda t: (-t.count, t.first_line))[:limit]
