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
from typing import Any, BinaryIO, Iterator

from forensics.parsing.envelope import split
from forensics.parsing.spec import Pattern, PatternSet

CHUNK = 4 << 20           # bytes per read on the fast path (small: chunks in flight bound peak memory)
SMALL = 2 << 20           # inputs up to this size stay on the pure-Python path
MAX_LINE = 8 << 20        # a line longer than this is cut into pieces (a 50 MB line is no reason to fail)
RAW_LIMIT = 4000          # characters of a raw line kept as evidence
HTTP_OK = b'HTTP/1.1" 200'
WORKERS = 2               # threads running the RE2 keyword pass ahead of the matching thread
LOOKAHEAD = 2             # chunks read ahead of the one being matched (bounds memory)


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
        self.re2_pattern = f"[^\\n]*(?:{alt})[^\\n]*"  # the whole candidate line (kept for reference)
        self.re2_alt = alt
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
        n_lines, idx, pos, lines, _ = self.arrow_batch(chunk)
        for i, p, b in zip(idx, pos, lines):
            yield first_line + i, p, b

    def arrow_batch(self, chunk: bytes, keywords: list[str] | None = None
                    ) -> tuple[int, list[int], list[int], list[bytes], list[list[int]] | None]:
        """One chunk through RE2 in a handful of C++ calls (they release the GIL).

        Returns the number of newlines in the chunk, and for each candidate line its index in
        the chunk, its start offset and its bytes; with `keywords`, also the indices of the
        keywords each candidate line contains (one vectorised substring test per keyword).
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), 1, [None, pa.array([0, len(chunk)], pa.int64()).buffers()[1], pa.py_buffer(chunk)])
        lines = pc.split_pattern(arr, "\n")[0].values  # one piece per line; n pieces = newlines + 1
        n_newlines = len(lines) - 1
        idx = pc.indices_nonzero(pc.match_substring_regex(lines, self.re2_alt))
        if len(idx) == 0:
            return n_newlines, [], [], [], [] if keywords is not None else None
        lens = pc.add(pc.binary_length(lines), 1)
        ends = pc.take(pc.cumulative_sum(lens), idx)
        starts = pc.subtract(ends, pc.take(lens, idx)).to_pylist()
        cand = pc.take(lines, idx)
        kws = None
        if keywords is not None:
            kws = [[] for _ in range(len(cand))]
            for k, kw in enumerate(keywords):
                for i in pc.indices_nonzero(pc.match_substring(cand, kw)).to_pylist():
                    kws[i].append(k)
        return n_newlines, idx.to_pylist(), starts, cand.to_pylist(), kws


def iter_chunks(stream: BinaryIO, size: int) -> Iterator[bytes]:
    """Chunks that end on a line boundary (a line longer than MAX_LINE is cut)."""
    return _iter_chunks(stream, itertools.repeat(size))


def _iter_chunks(stream: BinaryIO, sizes: Iterator[int]) -> Iterator[bytes]:
    carry = b""
    for size in sizes:
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



# ---------------------------------------------------------------- vectorised runtime lines
#
# Periodic stats lines are most of the hits in a long log (vLLM: one per 40 lines). For the
# keyword groups whose patterns are all runtime patterns with int/float fields and whose
# regex runs in RE2 with the same result on every sample line, the worker threads extract the
# fields of a whole chunk's lines in pyarrow; the main thread then handles each chunk's hits
# of those patterns as one `RuntimeBatch` (peaks by aggregate, rows only when asked for).
# A line takes this path only when nothing about it can make RE2 and Python differ: printable
# ASCII or tab (so \s, \w, \d and str.strip agree) with no trailing blank, no caret-notation
# escape, no other keyword, not longer than RAW_LIMIT, and an envelope of the plain vLLM form
# below (an optional process prefix, then the `LEVEL [MM-DD HH:MM:SS] [file.py:N]` header),
# which `envelope.split` peels the same way. The pattern then runs on the whole line: a
# vectorised pattern starts with a literal, and a line where that literal or the keyword first
# occurs inside the envelope is left to Python, so the match RE2 finds is the one Python finds
# in the message. Every other candidate line goes through Python.

_PRINTABLE = r"^[\t\x20-\x7e]*[\x21-\x7e]$"   # printable ASCII or tab, no trailing blank
# The envelope only (a short anchored match: RE2 reads its groups off ~60 bytes, not the line).
_ENV_RE2 = (
    r"^(?P<env>(?:\((?P<pname>[A-Za-z]\w*)(?: rank=(?P<prank>\d+))? pid=(?P<pid>\d+)\)\s*)?"
    r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+"
    r"(?:(?P<ts>\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\s+)?"
    r"(?:\[[^\]\s]+:\d+\]|[\w./-]+\.py:\d+\]))"
)
_INT_OK = r"^[0-9]{1,18}$"
_FLOAT_OK = r"^[0-9]{1,30}(?:\.[0-9]{1,30})?$"


def _rank_of(pname: str, prank: str, pid: str) -> str | None:
    """The rank `envelope.split` reads off a process prefix (empty strings: no prefix)."""
    if not pname:
        return None
    if prank:
        return f"{pname} rank={prank}"
    if pname == "VllmWorkerProcess":
        return f"{pname} pid={pid}"
    return pname


_PREFIXES: dict[tuple[str, int], str] = {}


def _literal_prefix(p: Pattern) -> str:
    """The literal text every match of the pattern starts with ('' if none)."""
    key = (p.regex.pattern, p.regex.flags)
    got = _PREFIXES.get(key)
    if got is None:
        got = _PREFIXES[key] = _parse_prefix(p)
    return got


def _parse_prefix(p: Pattern) -> str:
    from re import _parser  # type: ignore[attr-defined]

    out = []
    try:
        for op, arg in _parser.parse(p.regex.pattern, p.regex.flags):
            if op is not _parser.LITERAL:
                break
            out.append(chr(arg))
    except Exception:  # noqa: BLE001 - any doubt: not vectorised
        return ""
    return "".join(out)


def _vectorisable(p: Pattern) -> bool:
    if p.section != "runtime" or not p.fields or p.regex.flags & ~re.UNICODE:
        return False
    prefix = _literal_prefix(p)
    if not prefix or prefix[0].isspace() or not p.keyword or p.keyword[0].isspace():
        return False
    if len({f.name for f in p.fields}) != len(p.fields):
        return False
    return all(f.type in ("int", "float") and not f.map and f.scale is None for f in p.fields)


def _setup_fast(patterns: PatternSet, by_keyword: dict[str, list[Pattern]]) -> dict[str, list[Pattern]]:
    """Keyword -> patterns of the groups that take the vectorised path (checked on every sample)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from forensics.parsing.envelope import split as py_split

    printable = re.compile(_PRINTABLE.replace("$", "\\Z"))
    lines = [s["line"] for p in patterns.patterns for s in p.samples
             if isinstance(s.get("line"), str) and printable.match(s["line"]) and "^[" not in s["line"]]
    # The envelope regex against envelope.split on every sample line it accepts.
    arr = pa.array([ln.encode() for ln in lines], pa.large_binary())
    envs = pc.extract_regex(arr, _ENV_RE2).to_pylist()
    kept = []  # (line, envelope length, message) of the sample lines the envelope regex accepts
    for ln, e in zip(lines, envs):
        if e is None:
            continue
        sp = py_split(ln)
        n = len(e["env"])
        got = (ln[n:].strip(), _rank_of(e["pname"].decode(), e["prank"].decode(), e["pid"].decode()),
               e["level"].decode(), e["ts"].decode() or None)
        if got != (sp.message, sp.rank, sp.level, sp.time):
            return {}
        kept.append((ln, n, sp.message))
    messages = [py_split(ln).message for ln in lines]
    fast: dict[str, list[Pattern]] = {}
    for kw, group in by_keyword.items():
        if not all(_vectorisable(p) for p in group):
            continue
        ok = True
        for p in group:
            prefix = _literal_prefix(p)
            # on every sample message, and on every accepted whole sample line as the scanner runs it
            texts = messages + [ln for ln, n, _ in kept if not (0 <= ln.find(prefix) < n or 0 <= ln.find(p.keyword) < n)]
            wants = messages + [msg for ln, n, msg in kept if not (0 <= ln.find(prefix) < n or 0 <= ln.find(p.keyword) < n)]
            try:
                got = pc.extract_regex(pa.array([t.encode() for t in texts], pa.large_binary()), p.regex.pattern).to_pylist()
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                ok = False
                break
            for msg, g in zip(wants, got):
                m = p.regex.search(msg)
                want = None if m is None else {k: v or "" for k, v in m.groupdict().items()}
                have = None if g is None else {k: v.decode() for k, v in g.items()}
                if want != have:
                    ok = False
                    break
            if not ok:
                break
        if ok:
            fast[kw] = group
    return fast


@dataclass(slots=True)
class _Part:
    """The hits of one vectorised pattern on one chunk, as columns (lines relative to the chunk)."""

    pattern: Pattern
    order: int            # the pattern's position in its keyword group (hits of one line go in that order)
    rel: Any              # pa.Int64Array: line index in the chunk
    raw: Any              # pa binary arrays, one value per hit
    level: Any
    ts: Any
    pname: Any
    prank: Any
    pid: Any
    values: dict[str, Any]  # field name -> typed pa.Array (null: the group did not yield a value)


class RuntimeBatch:
    """The hits of the vectorised runtime patterns on one chunk (possibly none).

    `Scanner.scan(batches=True)` yields one after the other hits of each chunk; otherwise
    its hits are merged into the stream as `Hit`s.
    """

    __slots__ = ("parts", "line_base")

    def __init__(self, parts: list[_Part], line_base: int = 0) -> None:
        self.parts = parts
        self.line_base = line_base

    def __len__(self) -> int:
        return sum(len(p.rel) for p in self.parts)

    def _rank(self, part: _Part, i: int) -> str | None:
        return _rank_of(part.pname[i].as_py().decode(), part.prank[i].as_py().decode(), part.pid[i].as_py().decode())

    def _hit(self, part: _Part, i: int, values: dict[str, Any] | None = None) -> Hit:
        if values is None:
            values = {}
            for f in part.pattern.fields:
                v = part.values[f.name][i].as_py()
                if v is not None:
                    values[f.name] = v
        ts = part.ts[i].as_py().decode()
        raw = part.raw[i].as_py().decode()
        return Hit(part.pattern, values, self.line_base + part.rel[i].as_py(), raw,
                   split(raw).message, self._rank(part, i), part.level[i].as_py().decode(), ts or None)

    def hit_at(self, part_no: int, i: int) -> Hit:
        return self._hit(self.parts[part_no], i)

    def records(self) -> list[tuple[int, int, str | None, str | None, Pattern, dict[str, Any]]]:
        """(line, order, time, rank, pattern, values) of every hit, sorted by line then order."""
        out = []
        base = self.line_base
        for part in self.parts:
            names = [f.name for f in part.pattern.fields]
            cols = [part.values[n].to_pylist() for n in names]
            ranks: dict[tuple[bytes, bytes, bytes], str | None] = {}
            for rel, ts, pn, pr, pi, *vals in zip(part.rel.to_pylist(), part.ts.to_pylist(), part.pname.to_pylist(),
                                                   part.prank.to_pylist(), part.pid.to_pylist(), *cols):
                key = (pn, pr, pi)
                rank = ranks.get(key, False)
                if rank is False:
                    rank = ranks[key] = _rank_of(pn.decode(), pr.decode(), pi.decode())
                values = {n: v for n, v in zip(names, vals) if v is not None}
                out.append((base + rel, part.order, ts.decode() or None, rank, part.pattern, values))
        if len(self.parts) > 1:
            out.sort(key=lambda r: (r[0], r[1]))
        return out

    def hits(self) -> list[Hit]:
        out = [self._hit(part, i) for part in self.parts for i in range(len(part.rel))]
        if len(self.parts) > 1:
            order = {id(p.pattern): p.order for p in self.parts}
            out.sort(key=lambda h: (h.line, order[id(h.pattern)]))
        return out

    def peaks(self) -> dict[str, tuple[Any, int, int, int, int]]:
        """Field name -> (max value, line, order, part number, index): the first hit with the max."""
        import pyarrow.compute as pc

        best: dict[str, tuple[Any, int, int, int, int]] = {}
        for k, part in enumerate(self.parts):
            for name, col in part.values.items():
                mx = pc.max(col).as_py()
                if mx is None:
                    continue
                i = pc.index(col, mx).as_py()
                line = self.line_base + part.rel[i].as_py()
                cur = best.get(name)
                if cur is None or mx > cur[0] or (mx == cur[0] and (line, part.order) < (cur[1], cur[2])):
                    best[name] = (mx, line, part.order, k, i)
        return best

    def first(self, skip_events: tuple[str, ...]) -> tuple[int, int] | None:
        """(part number, index) of the first hit whose pattern's event is not in `skip_events`."""
        best = None
        for k, part in enumerate(self.parts):
            if part.pattern.event in skip_events or len(part.rel) == 0:
                continue
            key = (part.rel[0].as_py(), part.order)
            if best is None or key < best[0]:
                best = (key, k)
        return None if best is None else (best[1], 0)


@dataclass(slots=True)
class _ChunkPass:
    n_newlines: int
    idx: list[int]          # the candidate lines left to Python: index in the chunk,
    starts: list[int]       # start offset,
    raws: list[bytes]       # bytes
    kws: list[list[int]]    # and the keywords they contain
    parts: list[_Part]


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
        self._fast: dict[str, list[Pattern]] | None = None  # set up on the first RE2 chunk
        self._others: dict[str, str] = {}

    def _setup_fast(self) -> None:
        if self._fast is not None:
            return
        self._fast = _setup_fast(self.patterns, self.by_keyword)
        for kw in self._fast:
            self._others[kw] = "|".join(_re2_escape(k) for k in sorted(self._keywords, key=len, reverse=True) if k != kw)

    def _arrow_pass(self, chunk: bytes) -> _ChunkPass:
        """The worker-thread pass over one chunk: candidate lines, and the vectorised runtime hits."""
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), 1, [None, pa.array([0, len(chunk)], pa.int64()).buffers()[1], pa.py_buffer(chunk)])
        lines = pc.split_pattern(arr, "\n")[0].values
        n_newlines = len(lines) - 1
        idx = pc.indices_nonzero(pc.match_substring_regex(lines, self.prefilter.re2_alt))
        if len(idx) == 0:
            return _ChunkPass(n_newlines, [], [], [], [], [])
        lens = pc.add(pc.binary_length(lines), 1)
        ends = pc.take(pc.cumulative_sum(lens), idx)
        starts = pc.subtract(ends, pc.take(lens, idx))
        cand = pc.take(lines, idx)
        parts: list[_Part] = []
        handled: list[Any] = []
        ok = None
        for kw, group in (self._fast or {}).items():
            m = pc.match_substring(cand, kw)
            if not pc.any(m).as_py():
                continue
            if ok is None:
                ok = pc.and_(pc.and_(pc.match_substring_regex(cand, _PRINTABLE), pc.invert(pc.match_substring(cand, "^["))),
                             pc.less_equal(pc.binary_length(cand), RAW_LIMIT))
            m = pc.and_(m, ok)
            if self._others[kw]:
                m = pc.and_(m, pc.invert(pc.match_substring_regex(cand, self._others[kw])))
            sel = pc.indices_nonzero(m)
            if len(sel) == 0:
                continue
            lines_f = pc.take(cand, sel)
            env = pc.extract_regex(lines_f, _ENV_RE2)
            good = pc.is_valid(env)
            env_len = pc.binary_length(pc.struct_field(env, "env"))
            found = []
            for order, p in enumerate(group):
                for lit in (_literal_prefix(p), p.keyword):
                    pos = pc.find_substring(lines_f, lit)
                    # first seen inside the envelope: leave the line to Python
                    good = pc.and_(good, pc.or_(pc.less(pos, 0), pc.greater_equal(pos, env_len)))
                g = pc.extract_regex(lines_f, p.regex.pattern)
                hit = pc.fill_null(pc.and_(pc.is_valid(g), pc.match_substring(lines_f, p.keyword)), False)
                if not pc.any(hit).as_py():
                    found.append((order, p, hit, None))
                    continue
                vals = {}
                for f in p.fields:
                    col = pc.replace_substring(pc.struct_field(g, f.group), ",", "")
                    if f.type == "int":
                        col = pc.replace_substring(col, "_", "")
                    col = pc.if_else(pc.equal(pc.binary_length(col), 0), pa.scalar(None, col.type), col)
                    valid = pc.fill_null(pc.match_substring_regex(col, _INT_OK if f.type == "int" else _FLOAT_OK), True)
                    good = pc.and_(good, pc.or_(pc.invert(hit), valid))
                    vals[f.name] = (col, f.type)
                found.append((order, p, hit, vals))
            good = pc.fill_null(good, False)
            handled.append(pc.filter(sel, good))
            for order, p, hit, vals in found:
                if vals is None:
                    continue
                take = pc.indices_nonzero(pc.and_(hit, good))
                if len(take) == 0:
                    continue
                values = {}
                for name, (col, ftype) in vals.items():
                    col = pc.take(col, take).cast(pa.large_string())
                    values[name] = col.cast(pa.int64() if ftype == "int" else pa.float64())
                parts.append(_Part(
                    p, order, pc.take(idx, pc.take(sel, take)), pc.take(lines_f, take),
                    *(pc.take(pc.struct_field(env, n), take) for n in ("level", "ts", "pname", "prank", "pid")), values))
        if handled:
            done = pc.is_in(pa.array(range(len(cand)), pa.int64()),
                            value_set=pa.concat_arrays([h.cast(pa.int64()) for h in handled]))
            rest = pc.indices_nonzero(pc.invert(done))
            idx, starts, cand = pc.take(idx, rest), pc.take(starts, rest), pc.take(cand, rest)
        raws = cand.to_pylist()
        keywords = self._keywords
        if len(raws) < 256:
            kws = [[k for k, kw in enumerate(self._keywords_b) if kw in raw] for raw in raws]
        else:
            kws = [[] for _ in range(len(raws))]
            for k, kw in enumerate(keywords):
                for i in pc.indices_nonzero(pc.match_substring(cand, kw)).to_pylist():
                    kws[i].append(k)
        return _ChunkPass(n_newlines, idx.to_pylist(), starts.to_pylist(), raws, kws, parts)

    def _patterns_for(self, message: str) -> list[Pattern]:
        found: list[Pattern] = []
        for kw, pats in self.by_keyword.items():
            if kw in message:
                found.extend(pats)
        return found

    def scan(self, stream: BinaryIO, fast: bool | None = None, batches: bool = False) -> Iterator[Hit | RuntimeBatch]:
        """Yield every hit in the stream.

        Args:
            stream: decompressed bytes of the log.
            fast: force the RE2 path (True) or the Python path (False); by default an input
                of at most SMALL bytes uses Python (no pyarrow import) and a larger one RE2.
            batches: yield the hits of the vectorised runtime patterns of each chunk as one
                `RuntimeBatch` after the chunk's other hits (one per chunk, possibly empty; the
                caller orders by line where it matters). Without it they are `Hit`s in file order.

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
                self._setup_fast()
                pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="forensics-scan")
            while True:
                while pool is not None and len(pending) < LOOKAHEAD + 1:
                    nxt = next(chunks, None)
                    if nxt is None:
                        break
                    pending.append((nxt, pool.submit(self._arrow_pass, nxt)))
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
                if fut is None:
                    cands = ((line_no, offset, raw, None) for line_no, offset, raw in self.prefilter.python(chunk, line_base))
                else:
                    cp = fut.result()
                    cands = zip((line_base + i for i in cp.idx), cp.starts, cp.raws, cp.kws)
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
                            fatal_offset = offset + len(raw_bytes)
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
                n = chunk.count(b"\n")
                if chunk and not chunk.endswith(b"\n"):
                    n += 0 if len(chunk) > MAX_LINE else 1
                line_base += n
                self.lines_read = line_base - 1
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

