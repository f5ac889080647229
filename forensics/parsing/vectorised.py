"""Runtime lines in batches: stats lines extracted in pyarrow, one chunk at a time.

Periodic stats lines are most of the hits in a long log (vLLM: one per 40 lines). For the
keyword groups whose patterns are all runtime patterns with int/float fields and whose regex
runs in RE2 with the same result on every sample line, the scanner's worker threads extract
the fields of a whole chunk's lines in pyarrow (C++ calls that release the GIL); the main
thread then handles each chunk's hits of those patterns as one `RuntimeBatch` (peaks by
aggregate, rows only when asked for).

A line takes this path only when nothing about it can make RE2 and Python differ: printable
ASCII or tab (so \\s, \\w, \\d and str.strip agree) with no trailing blank, no caret-notation
escape, one keyword match and no other keyword, not longer than RAW_LIMIT, and an envelope of the plain vLLM form
(`_ENV_RE2`: an optional process prefix, then the `LEVEL [MM-DD HH:MM:SS] [file.py:N]`
header), which `envelope.split` peels the same way (checked on every sample line).

Each pattern runs as one anchored regex over the whole line: the envelope, then the shortest
run of anything, then the pattern (`_combined`). Every part of `_ENV_RE2` has one way to
match (each optional part starts with a character its alternative cannot start with, and
each repeat stops at a character it cannot take), so the envelope groups are the ones the
envelope alone gives, and the lazy run makes the pattern's match the leftmost one after the
envelope: the match Python's `search` finds in the message. Anchored, RE2 reads every group
in one call, about half the cost of the envelope and an unanchored extraction (which must
first find where the match starts) run one after the other (docs/scan-design.md). A pattern that matches nowhere in the line (a plain DFA test, the cheapest
RE2 call) yields nothing there, as in Python; a line where the test says yes but the
anchored form fails, or a field text that would not convert the same way, goes to Python.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from forensics import parsing
from forensics.parsing.envelope import split
from forensics.parsing.hit import RAW_LIMIT, Hit
from forensics.parsing.spec import Pattern, PatternSet

# Printable ASCII or tab, no trailing blank, no caret-notation escape (`^[`, which
# `envelope.clean` removes anywhere); one `\r` may end the line (a CRLF log): the scanner's
# Python path splits a line at `\r` and skips the empty piece after it, so the batch path
# reads the line without it.
_CLEAN = (r"^(?:[\t\x20-\x5d\x5f-\x7e]|\^+[\t\x20-\x5a\x5c\x5d\x5f-\x7e])*"
          r"(?:[\x21-\x5d\x5f-\x7e]|\^+[\x21-\x5a\x5c\x5d\x5f-\x7e]|\^+)\r?$")
_ENV_RE2 = (
    r"^(?P<env>(?:\((?P<pname>[A-Za-z]\w*)(?: rank=(?P<prank>\d+))? pid=(?P<pid>\d+)\)\s*)?"
    r"(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+"
    r"(?:(?P<ts>\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\s+)?"
    r"(?:\[[^\]\s]+:\d+\]|[\w./-]+\.py:\d+\]))"
)
_ENV_GROUPS = ("env", "pname", "prank", "pid", "level", "ts")
_INT_OK = r"^[0-9]{1,18}$"
_FLOAT_OK = r"^[0-9]{1,30}(?:\.[0-9]{1,30})?$"
# Group texts every match of which converts the same way in Python and in pyarrow once its
# commas are removed (ASCII digits, with an optional fraction for a float), and whether a
# match can hold commas. A field of another form is checked value by value (`_INT_OK`...).
_SAFE_GROUPS = {
    "int": {r"\d+": False, r"\d[\d,]*": True},
    "float": {r"\d+": False, r"\d+(?:\.\d+)?": False, r"\d+\.\d+": False, r"\d[\d,]*(?:\.\d+)?": True},
}
_MAX_CHARS = {"int": 18, "float": 60}  # longer texts go to Python (int64 range, no overflow)


def rank_of(pname: str, prank: str, pid: str) -> str | None:
    """The rank `envelope.split` reads off a process prefix (empty strings: no prefix)."""
    if not pname:
        return None
    if prank:
        return f"{pname} rank={prank}"
    if pname == "VllmWorkerProcess":
        return f"{pname} pid={pid}"
    return pname


def literal_prefix(p: Pattern) -> str:
    """The literal text every match of the pattern starts with ('' if none)."""
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


def _combined(p: Pattern) -> str:
    return f"{_ENV_RE2}(?:.*?)(?:{p.regex.pattern})"


def vectorisable(p: Pattern) -> bool:
    """Whether the pattern's form allows the batch path at all (samples decide the rest)."""
    if p.section != "runtime" or not p.fields or p.regex.flags & ~re.UNICODE:
        return False
    prefix = literal_prefix(p)
    # a match then holds the keyword, so Python's test of the keyword on the message holds too
    if not prefix or prefix[0].isspace() or not p.keyword or p.keyword not in prefix:
        return False
    if len({f.name for f in p.fields}) != len(p.fields) or set(p.regex.groupindex) & set(_ENV_GROUPS):
        return False
    return all(f.type in ("int", "float") and not f.map and f.scale is None for f in p.fields)


def _sample_lines(patterns: PatternSet) -> list[str]:
    clean = re.compile(_CLEAN.replace("$", "\\Z"))  # the lines the batch path may be offered
    return [s["line"] for p in patterns.patterns for s in p.samples
            if isinstance(s.get("line"), str) and clean.match(s["line"])]


def _env_agrees(line: str, sp: Any, groups: dict[str, bytes]) -> bool:
    """The envelope groups RE2 read off a line say what `envelope.split` says of it."""
    env = {k: groups[k].decode() for k in _ENV_GROUPS}
    return (line[len(env["env"]):].strip(), rank_of(env["pname"], env["prank"], env["pid"]), env["level"],
            env["ts"] or None) == (sp.message, sp.rank, sp.level, sp.time)


def _agrees(p: Pattern, lines: list[str], splits: list[Any], arr: Any) -> bool:
    """RE2 gives what Python gives for the pattern on every sample line, as the batch path runs it."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        anywhere = pc.match_substring_regex(arr, p.regex.pattern).to_pylist()
        got = pc.extract_regex(arr, _combined(p)).to_pylist()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    for ln, sp, any_, g in zip(lines, splits, anywhere, got):
        m = p.regex.search(sp.message) if p.keyword in sp.message else None
        if m is not None and not any_:
            return False  # the DFA test would drop a line Python matches
        if g is None:
            continue      # the line would go to Python
        if m is None:
            return False
        if not _env_agrees(ln, sp, g):
            return False
        if {k: v or "" for k, v in m.groupdict().items()} != {k: g[k].decode() for k in p.regex.groupindex}:
            return False
    return True


def _subpatterns(av: Any) -> Any:
    """The parsed sub-patterns inside one node's arguments."""
    from re import _parser  # type: ignore[attr-defined]

    if isinstance(av, _parser.SubPattern):
        yield av
    elif isinstance(av, (tuple, list)):
        for x in av:
            yield from _subpatterns(x)


def group_form(p: Pattern, group: str) -> str | None:
    """The parsed form of a named group of the pattern, as text (None if not found)."""
    from re import _parser  # type: ignore[attr-defined]

    def find(sub: Any, gi: int) -> Any:
        for op, av in sub.data:
            if op is _parser.SUBPATTERN and av[0] == gi:
                return av[3]
            for inner in _subpatterns(av):
                got = find(inner, gi)
                if got is not None:
                    return got
        return None

    gi = p.regex.groupindex.get(group)
    if gi is None:
        return None
    try:
        found = find(_parser.parse(p.regex.pattern, p.regex.flags), gi)
    except Exception:  # noqa: BLE001 - any doubt: checked value by value
        return None
    return None if found is None else repr(found.data)


def _safe_forms() -> dict[str, dict[str, bool]]:
    """`_SAFE_GROUPS` by parsed form (so `[0-9]+`, `\\d+` and a group spelled oddly compare right)."""
    from re import _parser  # type: ignore[attr-defined]

    return {kind: {repr(_parser.parse(src).data): commas for src, commas in forms.items()}
            for kind, forms in _SAFE_GROUPS.items()}


@dataclass(slots=True)
class _Field:
    name: str
    group: str
    kind: str                       # "int" or "float"
    commas: bool | None             # a safe group that can / cannot hold commas; None: check each value


@dataclass(slots=True)
class _Fast:
    pattern: Pattern
    order: int                      # position in the keyword group
    combined: str                   # the anchored envelope + pattern regex
    fields: list[_Field]
    overlaps: str | None = None     # texts where another keyword would overlap the group's keyword
    expect_all: bool = False        # matched every offered line of the last chunk: extract first


def fast_groups(patterns: PatternSet, by_keyword: dict[str, list[Pattern]]) -> dict[str, list[_Fast]]:
    """Keyword -> its patterns, for the groups that take the batch path (checked on every sample)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    lines = _sample_lines(patterns)
    splits = [split(ln) for ln in lines]
    arr = pa.array([ln.encode() for ln in lines], pa.large_binary())
    # the envelope regex against envelope.split on every sample line it reads, whatever its pattern
    for ln, sp, env in zip(lines, splits, pc.extract_regex(arr, _ENV_RE2).to_pylist()):
        if env is not None and not _env_agrees(ln, sp, env):
            return {}
    safe = _safe_forms()
    out: dict[str, list[_Fast]] = {}
    for kw, group in by_keyword.items():
        if all(vectorisable(p) for p in group) and all(_agrees(p, lines, splits, arr) for p in group):
            out[kw] = [_Fast(p, k, _combined(p), [
                _Field(f.name, f.group, f.type, safe[f.type].get(group_form(p, f.group) or ""))
                for f in p.fields]) for k, p in enumerate(group)]
    return out


# ---------------------------------------------------------------- per-chunk results

@dataclass(slots=True)
class Part:
    """The hits of one vectorised pattern on one chunk, as columns (lines relative to the chunk)."""

    pattern: Pattern
    order: int            # the pattern's position in its keyword group (hits of one line go in that order)
    rel: Any              # pa integer array: line index in the chunk
    raw: Any              # pa binary arrays, one value per hit
    level: Any
    ts: Any
    pname: Any
    prank: Any
    pid: Any
    values: dict[str, Any]  # field name -> typed pa.Array (null: the group did not yield a value)


@dataclass(slots=True)
class ChunkPass:
    """What the worker pass found in one chunk."""

    n_newlines: int
    idx: list[int]          # the candidate lines left to Python: index in the chunk,
    raws: list[bytes]       # bytes
    kws: list[list[int]]    # and the keywords they contain
    parts: list[Part]


class RuntimeBatch:
    """The hits of the vectorised runtime patterns on one chunk (possibly none).

    `Scanner.scan(batches=True)` yields one after the other hits of each chunk; otherwise
    its hits are merged into the stream as `Hit`s.
    """

    __slots__ = ("parts", "line_base")

    def __init__(self, parts: list[Part], line_base: int = 0) -> None:
        self.parts = parts
        self.line_base = line_base

    def __len__(self) -> int:
        return sum(len(p.rel) for p in self.parts)

    def _rank(self, part: Part, i: int) -> str | None:
        return rank_of(part.pname[i].as_py().decode(), part.prank[i].as_py().decode(), part.pid[i].as_py().decode())

    def _hit(self, part: Part, i: int, values: dict[str, Any] | None = None) -> Hit:
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
                    rank = ranks[key] = rank_of(pn.decode(), pr.decode(), pi.decode())
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
                mx = pc.max(col)
                if not mx.is_valid:
                    continue
                i = pc.index(col, mx).as_py()
                mx = mx.as_py()
                line = self.line_base + part.rel[i].as_py()
                cur = best.get(name)
                if cur is None or mx > cur[0] or (mx == cur[0] and (line, part.order) < (cur[1], cur[2])):
                    best[name] = (mx, line, part.order, k, i)
        return best

    def first_seen(self, known: dict[str, tuple[int, int]], prefix: str = "") -> dict[str, tuple[int, int]]:
        """Field name -> (line, order on the line) of its first value in this batch, for the
        fields not in `known` (keyed `prefix` + name) or known only from a later line."""
        import pyarrow.compute as pc

        out: dict[str, tuple[int, int]] = {}
        for part in self.parts:
            for j, (name, col) in enumerate(part.values.items()):
                cur = out.get(name) or known.get(prefix + name)
                if cur is not None and cur[0] < self.line_base:
                    continue  # seen in an earlier chunk
                i = pc.index(pc.is_valid(col), True).as_py()
                if i < 0:
                    continue
                seen = (self.line_base + part.rel[i].as_py(), part.order * 1000 + j)
                if cur is None or seen < cur:
                    out[name] = seen
        return out

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


# ---------------------------------------------------------------- the worker pass

def re2_escape(text: str) -> str:
    return re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text)


def keyword_alternation(keywords: list[str]) -> str:
    """An RE2 alternation of the literal keywords, longest first."""
    return "|".join(re2_escape(k) for k in sorted(set(keywords), key=len, reverse=True))


def overlap_strings(kw: str, keywords: list[str]) -> list[str] | None:
    """The texts in which a keyword occurrence shares characters with one of `kw` (None: every
    occurrence of `kw` holds another keyword, so its lines always go to Python)."""
    out = []
    for k in keywords:
        if k != kw and k in kw:
            return None
        if k != kw and kw in k:
            out.append(k)
        for j in range(1, min(len(k), len(kw)) + (k != kw)):
            if k.endswith(kw[:j]):
                out.append(k + kw[j:])
            if kw.endswith(k[:j]):
                out.append(kw + k[j:])
    return sorted(set(out))


def _returning_pool(pa: Any) -> None:
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL") or pa.default_memory_pool().backend_name != "mimalloc":
        return  # the user chose, or an earlier scan in this process did
    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except (NotImplementedError, pa.ArrowNotImplementedError):
        pa.set_memory_pool(pa.system_memory_pool())


class ChunkPasser:
    """The worker-thread pass over one chunk: candidate lines, and the vectorised runtime hits.

    Every call below is one pyarrow kernel over a whole column (no Python per line), and no
    Python number is passed to a kernel: converting one makes pyarrow try an optional import
    each time, which cost more than the kernels.

    A line is offered to the batch path only when RE2 counts one keyword match on it and it
    holds none of the texts in which another keyword occurrence would overlap a vectorised
    keyword (`overlap_strings`): then a line a vectorised pattern matches holds that
    pattern's keyword and no other, since the one counted match is the leftmost occurrence
    and any other occurrence would overlap it. A line where no vectorised pattern matches
    goes to Python.
    """

    def __init__(self, patterns: PatternSet, by_keyword: dict[str, list[Pattern]]) -> None:
        import pyarrow as pa

        if parsing.OWN_PROCESS:
            _returning_pool(pa)
        self.keywords = list(by_keyword)
        self._keywords_b = [k.encode() for k in self.keywords]
        self.alt = keyword_alternation(self.keywords)
        self.groups = {}
        for kw, g in fast_groups(patterns, by_keyword).items():
            texts = overlap_strings(kw, self.keywords)
            if texts is not None:
                self.groups[kw] = g
                for f in g:
                    f.overlaps = keyword_alternation(texts) if texts else None
        self._fast = [f for g in self.groups.values() for f in g]
        self._one = pa.scalar(1, pa.int64())
        self._raw_limit = pa.scalar(RAW_LIMIT, pa.int64())
        self._zero = pa.scalar(0, pa.int64())
        self._null_bin = pa.scalar(None, pa.large_binary())
        self._max_chars = {k: pa.scalar(v, pa.int64()) for k, v in _MAX_CHARS.items()}

    def __call__(self, chunk: bytes) -> ChunkPass:
        import pyarrow as pa
        import pyarrow.compute as pc

        arr = pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), 1, [None, pa.array([0, len(chunk)], pa.int64()).buffers()[1], pa.py_buffer(chunk)])
        lines = pc.split_pattern(arr, "\n")[0].values  # one piece per line; n pieces = newlines + 1
        n_newlines = len(lines) - 1
        if self._fast:
            # keyword matches per line: as cheap as a yes/no test, and it tells the lines with one
            counts = pc.count_substring_regex(lines, self.alt)
            idx = pc.indices_nonzero(pc.greater(counts, self._zero))
        else:
            idx = pc.indices_nonzero(pc.match_substring_regex(lines, self.alt))
        if len(idx) == 0:
            return ChunkPass(n_newlines, [], [], [], [])
        cand = lines.take(idx)
        parts: list[Part] = []
        if self._fast:
            ok = pc.and_(pc.and_(pc.equal(counts.take(idx), self._one),
                                 pc.less_equal(pc.binary_length(cand), self._raw_limit)),
                         pc.match_substring_regex(cand, _CLEAN))
            sel = pc.indices_nonzero(ok)
            if len(sel):
                every = len(sel) == len(cand)
                offered = cand if every else cand.take(sel)
                if pc.any(pc.ends_with(offered, "\r")).as_py():
                    offered = pc.replace_substring_regex(offered, "\r$", "")
                parts, taken = self._fast_parts(offered, idx if every else idx.take(sel))
                if taken is None:
                    taken = sel  # every offered line
                elif not every:
                    taken = sel.take(taken)
                if len(taken) == len(cand):
                    idx, cand = idx.slice(0, 0), cand.slice(0, 0)
                elif len(taken):
                    rest = pc.indices_nonzero(pc.invert(pc.is_in(pc.indices_nonzero(pc.is_valid(cand)), value_set=taken)))
                    idx, cand = idx.take(rest), cand.take(rest)
        raws = cand.to_pylist()
        if len(raws) < 256:
            kws = [[k for k, kw in enumerate(self._keywords_b) if kw in raw] for raw in raws]
        else:
            kws = [[] for _ in range(len(raws))]
            for k, kw in enumerate(self.keywords):
                for i in pc.indices_nonzero(pc.match_substring(cand, kw)).to_pylist():
                    kws[i].append(k)
        return ChunkPass(n_newlines, idx.to_pylist(), raws, kws, parts)

    def _fast_parts(self, lines: Any, rel: Any) -> tuple[list[Part], Any]:
        """The parts of the vectorised patterns on the offered lines, and the positions they took."""
        import pyarrow as pa
        import pyarrow.compute as pc

        found = []
        bad_parts = []
        for f in self._fast:
            if f.expect_all:
                # the pattern took every line last time: extract first, test only the misses
                g = pc.extract_regex(lines, f.combined)
                good = pc.is_valid(g)
                if pc.all(good).as_py():
                    at = None
                else:
                    miss = pc.indices_nonzero(pc.invert(good))
                    matched = pc.match_substring_regex(lines.take(miss), f.pattern.regex.pattern)
                    keep = pc.or_(good, pc.is_in(pc.indices_nonzero(pc.is_valid(lines)), value_set=miss.filter(matched)))
                    at = pc.indices_nonzero(keep)
                    if len(at) == 0:
                        f.expect_all = False
                        continue
                    g, good = g.take(at), good.take(at)
            else:
                at = pc.indices_nonzero(pc.match_substring_regex(lines, f.pattern.regex.pattern))
                if len(at) == 0:
                    continue  # matches nowhere on these lines: no hit, as in Python
                if len(at) == len(lines):
                    at = None
                g = pc.extract_regex(lines if at is None else lines.take(at), f.combined)
                good = pc.is_valid(g)
            f.expect_all = at is None
            if at is None:
                at = pc.indices_nonzero(pc.is_valid(lines))
            if f.overlaps is not None:
                good = pc.and_(good, pc.invert(pc.match_substring_regex(lines.take(at), f.overlaps)))
            vals = {}
            for fld in f.fields:
                col = pc.struct_field(g, fld.group)
                if fld.commas is not False:
                    col = pc.replace_substring(col, ",", "")
                if fld.commas is None and fld.kind == "int":
                    col = pc.replace_substring(col, "_", "")
                col = pc.if_else(pc.equal(pc.binary_length(col), self._zero), self._null_bin, col)
                if fld.commas is None:
                    valid = pc.match_substring_regex(col, _INT_OK if fld.kind == "int" else _FLOAT_OK)
                else:
                    valid = pc.less_equal(pc.binary_length(col), self._max_chars[fld.kind])
                good = pc.and_kleene(good, pc.or_kleene(pc.is_null(col), valid))
                vals[fld.name] = (col, fld.kind)
            good = pc.fill_null(good, False)
            if not pc.all(good).as_py():
                bad_parts.append(at.filter(pc.invert(good)))
            found.append((f, at, g, good, vals))
        if not found:
            return [], pa.array([], pa.uint64())
        bad = pa.concat_arrays(bad_parts) if bad_parts else None
        parts = []
        taken = []
        for f, at, g, good, vals in found:
            if bad is not None:
                # a line another pattern could not take goes to Python whole
                good = pc.and_(good, pc.invert(pc.is_in(at, value_set=bad)))
            if pc.all(good).as_py():
                take = None
            else:
                take = pc.indices_nonzero(good)
                if len(take) == 0:
                    continue
                g, at = g.take(take), at.take(take)
            every = len(at) == len(lines)
            taken.append(at)
            values = {name: (col if take is None else col.take(take)).cast(pa.large_string())
                      .cast(pa.int64() if kind == "int" else pa.float64()) for name, (col, kind) in vals.items()}
            parts.append(Part(f.pattern, f.order, rel if every else rel.take(at), lines if every else lines.take(at),
                              *(pc.struct_field(g, n) for n in ("level", "ts", "pname", "prank", "pid")), values))
        if len(taken) == 1 and len(taken[0]) == len(lines):
            return parts, None  # every offered line taken
        if not taken:
            return parts, pa.array([], pa.uint64())
        # two patterns of a group may both match a line: count it once
        return parts, pc.unique(pa.concat_arrays(taken)) if len(taken) > 1 else taken[0]
