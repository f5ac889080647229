"""The scanner: finds candidate lines by keyword, then applies only the patterns they name.

A log of several GiB is never read line by line through a list of regexes. It is read in
large chunks; one pass per chunk finds the lines that contain any pattern keyword, and only
those lines are decoded, unwrapped (see `envelope`) and matched, each against the few
patterns registered for the keyword it contains. Small inputs use Python's `re` for that
pass; large ones use RE2 through pyarrow, which scans a chunk in one C++ call. Both paths
yield the same candidates (tests compare them).
"""
from __future__ import annotations

import heapq
import itertools
import re
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable, Iterator

from forensics.parsing.envelope import split
from forensics.parsing.hit import RAW_LIMIT, Hit
from forensics.parsing.spec import Pattern, PatternSet
from forensics.parsing.vectorised import ChunkPasser, RuntimeBatch

__all__ = ["Hit", "RuntimeBatch", "Scanner", "iter_chunks", "RAW_LIMIT"]

CHUNK = 6 << 20           # bytes per read on the fast path (chunks in flight bound peak memory)
SMALL = 2 << 20           # inputs up to this size stay on the pure-Python path
MAX_LINE = 8 << 20        # a line longer than this is cut into pieces (a 50 MB line is no reason to fail)
HTTP_OK = b'HTTP/1.1" 200'
WORKERS = 2               # threads running the RE2 keyword pass ahead of the matching thread
LOOKAHEAD = 2             # chunks read ahead of the one being matched (bounds memory)


@dataclass(slots=True)
class HttpAfterFatal:
    """HTTP 200 responses logged after the first fatal error (a dead engine still serving)."""

    count: int = 0
    first_line: int | None = None
    first_raw: str | None = None


class Prefilter:
    """The Python keyword pass (small inputs): yields (line number, start offset, line bytes) of
    candidate lines. The RE2 pass of larger ones is `vectorised.ChunkPasser`."""

    def __init__(self, keywords: list[str]) -> None:
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


def iter_chunks(stream: BinaryIO, size: int) -> Iterator[bytes]:
    """Chunks that end on a line boundary (a line longer than MAX_LINE is cut)."""
    return _iter_chunks(stream, itertools.repeat(size))


def _iter_chunks(stream: BinaryIO, sizes: Iterator[int]) -> Iterator[bytes]:
    carry = b""
    for size in sizes:
        buf = _fill(stream, carry, size)
        if buf is None:
            if carry:
                yield carry
            return
        cut = buf.rfind(b"\n")
        if cut < 0:
            if len(buf) > MAX_LINE:
                yield buf  # a giant line: process it in pieces rather than hold it whole
                carry = b""
            else:
                carry = bytes(buf)
            continue
        carry = bytes(buf[cut + 1:])
        del buf[cut + 1:]
        yield buf


def _line_end(chunk: bytes, i: int) -> int:
    """Offset of the newline that ends line `i` (0-based) of the chunk (its length if none)."""
    pos = -1
    for _ in range(i + 1):
        pos = chunk.find(b"\n", pos + 1)
        if pos < 0:
            return len(chunk)
    return pos


def _fill(stream: BinaryIO, carry: bytes, size: int) -> bytearray | None:
    """`carry` followed by up to `size` more bytes of the stream (None at its end).

    The bytes are read straight into the chunk's own buffer, whose partial last line is then
    cut off its end: the only copy of the log's bytes is the kernel's.
    """
    readinto = getattr(stream, "readinto", None)
    if readinto is None:
        block = stream.read(size)
        if not block:
            return None
        buf = bytearray(carry)
        buf += block
        return buf
    buf = bytearray(len(carry) + size)
    buf[: len(carry)] = carry
    got = len(carry)
    with memoryview(buf) as view:
        while got < len(buf):
            n = readinto(view[got:])
            if not n:
                break
            got += n
    if got == len(carry):
        return None
    del buf[got:]
    return buf



class Scanner:
    """Applies a PatternSet to a byte stream and yields hits in file order."""

    def __init__(self, patterns: PatternSet) -> None:
        self.patterns = patterns
        self.by_keyword = patterns.by_keyword()
        self.prefilter = Prefilter(list(self.by_keyword))
        self._keywords = list(self.by_keyword)
        self._keywords_b = [k.encode() for k in self._keywords]
        self._kw_groups = [self.by_keyword[k] for k in self._keywords]
        # Which keyword a message contains, in one search: a named group per keyword.
        self._kw_names = {f"k{i}": kw for i, kw in enumerate(self.by_keyword)}
        self._kw_rx = re.compile("|".join(f"(?P<{n}>{re.escape(kw)})" for n, kw in self._kw_names.items()))
        self.http_after_fatal = HttpAfterFatal()
        self.lines_read = 0
        self.bytes_read = 0
        self._chunk_pass: ChunkPasser | None = None  # set up on the first RE2 chunk (imports pyarrow)

    def _passer(self) -> ChunkPasser:
        if self._chunk_pass is None:
            self._chunk_pass = ChunkPasser(self.patterns, self.by_keyword)
        return self._chunk_pass

    def _patterns_for(self, message: str) -> list[Pattern]:
        found: list[Pattern] = []
        for kw, pats in self.by_keyword.items():
            if kw in message:
                found.extend(pats)
        return found

    def scan(self, stream: BinaryIO, fast: bool | None = None, batches: bool = False,
             progress: Callable[[int], None] | None = None) -> Iterator[Hit | RuntimeBatch]:
        """Yield every hit in the stream.

        Args:
            stream: decompressed bytes of the log.
            fast: force the RE2 path (True) or the Python path (False); by default an input
                of at most SMALL bytes uses Python (no pyarrow import) and a larger one RE2.
            batches: yield the hits of the vectorised runtime patterns of each chunk as one
                `RuntimeBatch` after the chunk's other hits (one per chunk, possibly empty; the
                caller orders by line where it matters). Without it they are `Hit`s in file order.
            progress: called with the number of bytes of each chunk once its hits are out.

        On the RE2 path the keyword pass of the next chunks runs in worker threads (pyarrow
        releases the GIL) while this thread matches the candidate lines of the current one.
        """
        line_base = 1
        fatal_seen = False
        http = self.http_after_fatal
        pending: deque = deque()
        pool = None
        if fast is None:
            chunks = _iter_chunks(stream, itertools.chain((SMALL,), itertools.repeat(CHUNK)))
        else:
            chunks = iter_chunks(stream, SMALL if fast is False else CHUNK)
        try:
            if fast is None:
                # Only an input of at most SMALL bytes stays on the Python path (no pyarrow
                # import: fast startup); a larger one goes through RE2 from its first byte.
                first = next(chunks, None)
                second = next(chunks, None) if first is not None else None
                if second is None:
                    if first is not None:
                        pending.append((first, None))
                    fast = False
                else:
                    chunks = itertools.chain((first, second), chunks)
            if fast is not False:
                passer = self._passer()
                pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="forensics-scan")
            while True:
                while pool is not None and len(pending) < LOOKAHEAD + 1:
                    nxt = next(chunks, None)
                    if nxt is None:
                        break
                    pending.append((nxt, pool.submit(passer, nxt)))
                if not pending:
                    if pool is None:
                        nxt = next(chunks, None)
                        if nxt is None:
                            break
                        pending.append((nxt, None))
                    else:
                        break
                chunk, fut = pending.popleft()
                self.bytes_read += len(chunk)
                fatal_offset = 0 if fatal_seen else None
                batch = None
                n_newlines = None
                if fut is None:
                    cands = ((line_no, offset, raw, None) for line_no, offset, raw in self.prefilter.python(chunk, line_base))
                else:
                    cp = fut.result()
                    n_newlines = cp.n_newlines
                    cands = zip((line_base + i for i in cp.idx), itertools.repeat(None), cp.raws, cp.kws)
                    if cp.parts:
                        batch = RuntimeBatch(cp.parts, line_base)
                held: list[Hit] | None = [] if batch is not None and not batches else None
                for line_no, offset, raw_bytes, kw in cands:
                    for hit in self._match_line(raw_bytes, line_no, kw):
                        if held is None:
                            yield hit
                        else:
                            held.append(hit)
                        if not fatal_seen and hit.pattern.section == "error" and hit.pattern.event == "fatal":
                            fatal_seen = True
                            fatal_offset = offset + len(raw_bytes) if offset is not None else _line_end(chunk, line_no - line_base)
                if held is not None:
                    # lines are either vectorised or not: merging by line number keeps file order
                    yield from heapq.merge(held, batch.hits(), key=lambda h: h.line)
                elif batches:
                    yield batch if batch is not None else RuntimeBatch([], line_base)
                if fatal_offset is not None:
                    idx_ok = chunk.find(HTTP_OK, fatal_offset)
                    if idx_ok >= 0:
                        if http.first_line is None:
                            http.first_line = line_base + chunk.count(b"\n", 0, idx_ok)
                            ls = chunk.rfind(b"\n", 0, idx_ok) + 1
                            le = chunk.find(b"\n", idx_ok)
                            http.first_raw = chunk[ls: le if le >= 0 else len(chunk)].decode("utf-8", "replace")[:RAW_LIMIT]
                        http.count += chunk.count(HTTP_OK, fatal_offset)
                n = chunk.count(b"\n") if n_newlines is None else n_newlines
                if chunk and not chunk.endswith(b"\n"):
                    n += 0 if len(chunk) > MAX_LINE else 1
                line_base += n
                self.lines_read = line_base - 1
                if progress is not None:
                    progress(len(chunk))
        finally:
            if pool is not None:
                for _, fut in pending:
                    if fut is not None:
                        fut.cancel()
                pool.shutdown(wait=True)

    def _match_line(self, raw_bytes: bytes, line_no: int, kw_idx: list[int] | None = None) -> Iterator[Hit]:
        text = raw_bytes.decode("utf-8", "replace")
        if "\r" in text:
            segments = text.split("\r")
            kw_idx = None  # a keyword of the line may sit in another segment: test each one
        else:
            segments = (text,)
        for seg in segments:
            if not seg.strip():
                continue
            if kw_idx is None:
                pats = self._patterns_for(seg)
            else:
                # The keyword pass already tested each keyword on the line's bytes: an ASCII
                # keyword is in the bytes exactly when it is in their decoded text.
                groups = self._kw_groups
                pats = groups[kw_idx[0]] if len(kw_idx) == 1 else [p for k in kw_idx for p in groups[k]]
            if not pats:
                continue
            sp = split(seg)
            message = sp.message
            raw = sp_raw = seg.rstrip("\r\n")
            if len(raw) > RAW_LIMIT:
                sp_raw = raw[:RAW_LIMIT] + "…"
            for p in pats:
                if p.keyword not in message:
                    continue
                values = p.extract(message)
                if values is None:
                    continue
                yield Hit(p, values, line_no, sp_raw, message, sp.rank, sp.level, sp.time)

