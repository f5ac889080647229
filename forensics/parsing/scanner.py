"""The scanner: finds candidate lines by keyword, then applies only the patterns they name.

A log of several GiB is never read line by line through a list of regexes. It is read in
large chunks; one pass per chunk finds the lines that contain any pattern keyword, and only
those lines are decoded, unwrapped (see `envelope`) and matched, each against the few
patterns registered for the keyword it contains. Small inputs use Python's `re` for that
pass; large ones use RE2 through pyarrow, which scans a chunk in one C++ call. Both paths
yield the same candidates (tests compare them).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator

from forensics.parsing.envelope import split
from forensics.parsing.spec import Pattern, PatternSet

CHUNK = 16 << 20          # bytes per read on the fast path
SMALL = 2 << 20           # inputs up to this size stay on the pure-Python path
MAX_LINE = 8 << 20        # a line longer than this is cut into pieces (a 50 MB line is no reason to fail)
RAW_LIMIT = 4000          # characters of a raw line kept as evidence
HTTP_OK = b'HTTP/1.1" 200'


@dataclass(slots=True)
class Hit:
    """One pattern match on one line."""

    pattern: Pattern
    values: dict[str, Any]
    line: int
    raw: str
    message: str
    rank: str | None
    level: str | None
    time: str | None


@dataclass(slots=True)
class HttpAfterFatal:
    """HTTP 200 responses logged after the first fatal error (a dead engine still serving)."""

    count: int = 0
    first_line: int | None = None
    first_raw: str | None = None


def _re2_escape(text: str) -> str:
    return re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text)


class Prefilter:
    """The keyword pass: yields (line number, start offset, line bytes) of candidate lines."""

    def __init__(self, keywords: list[str]) -> None:
        alt = "|".join(_re2_escape(k) for k in sorted(set(keywords), key=len, reverse=True))
        self.re2_pattern = f"[^\\n]*(?:{alt})[^\\n]*"
        # Keywords only (no `[^\n]*` around them): Python's re would backtrack over every
        # start position of a long keyword-free line, which is quadratic in its length.
        self.py_rx = re.compile("|".join(re.escape(k) for k in sorted(set(keywords), key=len, reverse=True)).encode())

    def python(self, chunk: bytes, first_line: int) -> Iterator[tuple[int, int, bytes]]:
        line, pos = first_line, 0
        search = self.py_rx.search
        m = search(chunk)
        while m is not None:
            s = chunk.rfind(b"\n", 0, m.start()) + 1
            e = chunk.find(b"\n", m.end())
            if e < 0:
                e = len(chunk)
            line += chunk.count(b"\n", pos, s)
            pos = s
            yield line, s, chunk[s:e]
            m = search(chunk, e)

    def arrow(self, chunk: bytes, first_line: int) -> Iterator[tuple[int, int, bytes]]:
        import pyarrow as pa
        import pyarrow.compute as pc

        pieces = pc.split_pattern_regex(pa.array([chunk], pa.large_binary()), self.re2_pattern)[0].values
        if len(pieces) <= 1:
            return
        lens = pc.binary_length(pieces).to_pylist()
        nls = pc.count_substring(pieces, "\n").to_pylist()
        pos, line = 0, first_line
        for i in range(len(lens) - 1):
            pos += lens[i]
            line += nls[i]
            end = chunk.find(b"\n", pos)
            if end < 0:
                end = len(chunk)
            yield line, pos, chunk[pos:end]
            pos = end


def iter_chunks(stream: BinaryIO, size: int) -> Iterator[bytes]:
    """Chunks that end on a line boundary (a line longer than MAX_LINE is cut)."""
    carry = b""
    while True:
        block = stream.read(size)
        if not block:
            if carry:
                yield carry
            return
        buf = carry + block if carry else block
        cut = buf.rfind(b"\n")
        if cut < 0:
            if len(buf) > MAX_LINE:
                yield buf  # a giant line: process it in pieces rather than hold it whole
                carry = b""
            else:
                carry = buf
            continue
        yield buf[: cut + 1]
        carry = buf[cut + 1:]


class Scanner:
    """Applies a PatternSet to a byte stream and yields hits in file order."""

    def __init__(self, patterns: PatternSet) -> None:
        self.patterns = patterns
        self.by_keyword = patterns.by_keyword()
        self.prefilter = Prefilter(list(self.by_keyword))
        # Which keyword a message contains, in one search: a named group per keyword.
        self._kw_names = {f"k{i}": kw for i, kw in enumerate(self.by_keyword)}
        self._kw_rx = re.compile("|".join(f"(?P<{n}>{re.escape(kw)})" for n, kw in self._kw_names.items()))
        self.http_after_fatal = HttpAfterFatal()
        self.lines_read = 0
        self.bytes_read = 0

    def _patterns_for(self, message: str) -> list[Pattern]:
        found: list[Pattern] = []
        for kw, pats in self.by_keyword.items():
            if kw in message:
                found.extend(pats)
        return found

    def scan(self, stream: BinaryIO, fast: bool | None = None) -> Iterator[Hit]:
        """Yield every hit in the stream.

        Args:
            stream: decompressed bytes of the log.
            fast: force the RE2 path (True) or the Python path (False); by default the first
                SMALL bytes use Python and anything beyond them RE2.
        """
        line_base = 1
        fatal_seen = False
        http = self.http_after_fatal
        first = True
        for chunk in iter_chunks(stream, SMALL if fast is not True else CHUNK):
            self.bytes_read += len(chunk)
            use_arrow = fast if fast is not None else not first
            first = False
            finder = self.prefilter.arrow if use_arrow else self.prefilter.python
            fatal_offset = 0 if fatal_seen else None
            for line_no, offset, raw_bytes in finder(chunk, line_base):
                for hit in self._match_line(raw_bytes, line_no):
                    yield hit
                    if not fatal_seen and hit.pattern.section == "error" and hit.pattern.event == "fatal":
                        fatal_seen = True
                        fatal_offset = offset + len(raw_bytes)
            if fatal_offset is not None:
                idx = chunk.find(HTTP_OK, fatal_offset)
                if idx >= 0:
                    if http.first_line is None:
                        http.first_line = line_base + chunk.count(b"\n", 0, idx)
                        ls = chunk.rfind(b"\n", 0, idx) + 1
                        le = chunk.find(b"\n", idx)
                        http.first_raw = chunk[ls: le if le >= 0 else len(chunk)].decode("utf-8", "replace")[:RAW_LIMIT]
                    http.count += chunk.count(HTTP_OK, fatal_offset)
            n = chunk.count(b"\n")
            if chunk and not chunk.endswith(b"\n"):
                n += 0 if len(chunk) > MAX_LINE else 1
            line_base += n
            self.lines_read = line_base - 1

    def _match_line(self, raw_bytes: bytes, line_no: int) -> Iterator[Hit]:
        text = raw_bytes.decode("utf-8", "replace")
        segments = text.split("\r") if "\r" in text else (text,)
        for seg in segments:
            if not seg.strip():
                continue
            pats = self._patterns_for(seg)
            if not pats:
                continue
            sp = split(seg)
            raw = sp_raw = seg.rstrip("\r\n")
            if len(raw) > RAW_LIMIT:
                sp_raw = raw[:RAW_LIMIT] + "…"
            for p in pats:
                if p.keyword not in sp.message:
                    continue
                values = p.extract(sp.message)
                if values is None:
                    continue
                yield Hit(p, values, line_no, sp_raw, sp.message, sp.rank, sp.level, sp.time)
