"""Scan one engine log: hits from the scanner become facts, errors, an outcome and findings."""
from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Callable

from forensics.model import Evidence, Fact, FatalError, Finding
from forensics.parsing import pyrepr
from forensics.parsing.command import LaunchCommand, parse_command
from forensics.parsing.reader import open_log
from forensics.parsing.scanner import Hit, RuntimeBatch, Scanner
from forensics.parsing.spec import PatternSet, load_all

OUTCOMES = ("ready", "failed_startup", "crashed_after_ready", "unknown")
# Runtime rows that do not prove the server was serving: warm-up batches, kernel compilation.
NOT_SERVING = ("warmup", "compile")
_RANK_NUM = re.compile(r"\d+")

# vLLM prints the requested max_model_len as max_seq_len in its engine config line.
_ENGINE_CONFIG_RENAMES = {"max_seq_len": "max_model_len"}


def rank_key(rank: str | None) -> tuple[Any, ...]:
    """Sort key: no rank first, then by the numbers in the label (DP0 TP0 before DP1 TP2)."""
    if rank is None:
        return (0, ())
    return (1, tuple(int(n) for n in _RANK_NUM.findall(rank)), rank)


@dataclass
class RuntimeRow:
    """One periodic stats line (vLLM metrics, SGLang batch line)."""

    line: int
    time: str | None
    rank: str | None
    kind: str
    values: dict[str, Any]


@dataclass
class ScanResult:
    source: str
    engine: str | None = None
    outcome: str = "unknown"
    meta: dict[str, Fact] = field(default_factory=dict)
    requested: dict[str, Fact] = field(default_factory=dict)
    effective: dict[str, Fact] = field(default_factory=dict)
    runtime: dict[str, Fact] = field(default_factory=dict)
    errors: list[FatalError] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    ready: Evidence | None = None
    http_ok_after_fatal: int = 0
    http_ok_after_fatal_evidence: Evidence | None = None
    lines: int = 0
    runtime_rows: int = 0
    notes: list[Fact] = field(default_factory=list)

    @property
    def model(self) -> Fact | None:
        return self.meta.get("model")

    @property
    def engine_version(self) -> Fact | None:
        return self.meta.get("engine_version")


class _Collector:
    """Folds hits into facts, keeping memory independent of log size."""

    def __init__(self, source: str, on_runtime: Callable[[RuntimeRow], None] | None,
                 on_runtime_batch: Callable[[list[RuntimeRow]], None] | None = None) -> None:
        self.source = source
        self.on_runtime = on_runtime
        self.on_runtime_batch = on_runtime_batch
        self.want_rows = on_runtime is not None or on_runtime_batch is not None
        # Rows of the current chunk's other runtime hits, held until its RuntimeBatch arrives:
        # the two are merged by line so that rows reach the callback in file order.
        self.held_rows: list[RuntimeRow] = []
        self.sections: dict[str, dict[str, dict[str | None, Fact]]] = {
            "meta": {}, "requested": {}, "effective": {},
        }
        self.peaks: dict[str, Fact] = {}
        # where each peak was first seen, (line, rank of the field on that line): the result lists
        # peaks in that order, whichever path (Python or batch) and chunk order found them
        self.peak_first: dict[str, tuple[int, int]] = {}
        self._field_seq = 0
        self.counts: dict[str, Fact] = {}
        self.lists: dict[str, Fact] = {}
        self.errors: list[FatalError] = []
        self.ready: Evidence | None = None
        self.first_serving: Evidence | None = None
        self.startup_frames = 0
        self.runtime_frames = 0
        self.startup_markers: list[Evidence] = []
        self.engine_votes: dict[str, int] = {}
        self.runtime_rows = 0
        self.notes: list[Fact] = []
        self.priority: dict[tuple[str, str, str | None], int] = {}

    def evidence(self, hit: Hit) -> Evidence:
        return Evidence(self.source, hit.line, hit.raw)

    def put(self, section: str, name: str, value: Any, unit: str | None, hit: Hit, ev: Evidence | None = None) -> None:
        if value is None:
            return
        per_rank = self.sections[section].setdefault(name, {})
        if hit.rank in per_rank:
            # A duplicated line or a later repeat: the first one stands, unless a pattern
            # declared as the authoritative source (higher `priority`) reads it later, e.g.
            # SGLang's summary line over its earlier `KV Cache is allocated` line.
            if hit.pattern.priority <= self.priority.get((section, name, hit.rank), 0):
                return
        self.priority[(section, name, hit.rank)] = hit.pattern.priority
        per_rank[hit.rank] = Fact(name, value, unit, ev or self.evidence(hit), hit.rank, hit.pattern.id)

    def add(self, hit: Hit) -> None:
        p = hit.pattern
        if p.engine != "any":
            self.engine_votes[p.engine] = self.engine_votes.get(p.engine, 0) + 1
        units = {f.name: f.unit for f in p.fields}
        if p.section in ("meta", "requested", "effective"):
            for name, value in hit.values.items():
                self.put(p.section, name, value, units.get(name), hit)
        elif p.section == "config":
            self._config(hit)
        elif p.section == "runtime":
            self._runtime(hit, units)
        elif p.section == "event":
            self._event(hit)
        elif p.section == "error":
            self._error(hit)

    def _config(self, hit: Hit) -> None:
        msg = hit.message
        kind = hit.pattern.event
        if kind == "server_args":
            args = pyrepr.call(msg, "ServerArgs") or {}
            model = args.get("model_path")
        elif kind == "non_default_args":
            args = pyrepr.mapping(msg) or {}
            model = args.get("model") or args.get("model_tag")
        elif kind == "engine_config":
            body = msg.split("with config:", 1)[-1].rstrip()
            if body.endswith(")") and body.count(")") > body.count("("):
                body = body[:-1]  # V0 closes the whole config with ")": keep the last item
            args = {_ENGINE_CONFIG_RENAMES.get(k, k): v for k, v in pyrepr.kwargs(body).items()}
            model = args.get("model")
        else:
            return
        for key, value in args.items():
            if value is None and kind != "engine_config":
                continue
            self.put("requested", key, value, None, hit)
        if isinstance(model, str) and model:
            self.put("meta", "model", model, None, hit)
        for name, value in hit.values.items():
            self.put("meta", name, value, None, hit)

    # Hits of a chunk's vectorised runtime lines arrive as one RuntimeBatch after the chunk's
    # other hits, so everything below is independent of that order: the first serving line and
    # each peak are the earliest line with the value (ties on one line cannot mix the two kinds).

    def _runtime(self, hit: Hit, units: dict[str, str | None]) -> None:
        self.runtime_rows += 1
        if hit.pattern.event not in NOT_SERVING and (self.first_serving is None or hit.line < self.first_serving.line):
            self.first_serving = self.evidence(hit)
        if self.want_rows:
            self.held_rows.append(RuntimeRow(hit.line, hit.time, hit.rank, hit.pattern.event or hit.pattern.id, hit.values))
        for name, value in hit.values.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            key = f"peak_{name}"
            self._field_seq += 1
            first = self.peak_first.get(key)
            if first is None or hit.line < first[0]:
                self.peak_first[key] = (hit.line, self._field_seq)
            cur = self.peaks.get(key)
            if cur is None or value > cur.value or (value == cur.value and hit.line < cur.evidence.line):
                self.peaks[key] = Fact(key, value, units.get(name), self.evidence(hit), hit.rank, hit.pattern.id)

    def add_batch(self, batch: RuntimeBatch) -> None:
        """The vectorised runtime hits of one chunk (see `Scanner.scan(batches=True)`)."""
        if batch.parts:
            self.runtime_rows += len(batch)
            for part in batch.parts:
                if part.pattern.engine != "any":
                    self.engine_votes[part.pattern.engine] = self.engine_votes.get(part.pattern.engine, 0) + len(part.rel)
            first = batch.first(NOT_SERVING)
            if first is not None:
                hit = batch.hit_at(*first)
                if self.first_serving is None or hit.line < self.first_serving.line:
                    self.first_serving = self.evidence(hit)
            for name, seen in batch.first_seen(self.peak_first, "peak_").items():
                self.peak_first[f"peak_{name}"] = seen
            for name, (value, line, _, k, i) in batch.peaks().items():
                key = f"peak_{name}"
                cur = self.peaks.get(key)
                if cur is None or value > cur.value or (value == cur.value and line < cur.evidence.line):
                    hit = batch.hit_at(k, i)
                    p = hit.pattern
                    unit = next((f.unit for f in p.fields if f.name == name), None)
                    self.peaks[key] = Fact(key, value, unit, self.evidence(hit), hit.rank, p.id)
        self.flush_rows(batch)

    def flush_rows(self, batch: RuntimeBatch | None = None) -> None:
        if not self.want_rows:
            return
        rows = self.held_rows
        if batch is not None and batch.parts:
            new = [RuntimeRow(line, ts, rank, p.event or p.id, values) for line, _, ts, rank, p, values in batch.records()]
            rows = list(heapq.merge(rows, new, key=lambda r: r.line)) if rows else new
        self.held_rows = []
        if not rows:
            return
        if self.on_runtime_batch is not None:
            self.on_runtime_batch(rows)
        else:
            for row in rows:
                self.on_runtime(row)

    def _event(self, hit: Hit) -> None:
        ev = hit.pattern.event
        if ev == "ready":
            if self.ready is None:
                self.ready = self.evidence(hit)
        elif ev == "serving":
            if self.first_serving is None or hit.line < self.first_serving.line:
                self.first_serving = self.evidence(hit)
        elif ev in ("preemption",):
            name = "preemptions"
            cur = self.counts.get(name)
            n = hit.values.get("retracted")
            step = n if isinstance(n, int) and n > 1 else 1  # one retraction line may evict several
            if cur is None:
                self.counts[name] = Fact(name, step, "events", self.evidence(hit), hit.rank, hit.pattern.id)
            else:
                cur.value += step
        elif ev and ev.startswith("list:"):
            name = ev[5:]
            cur = self.lists.get(name)
            if cur is None:
                self.lists[name] = Fact(name, [hit.message], "messages", self.evidence(hit), hit.rank, hit.pattern.id)
            elif hit.message not in cur.value:
                cur.value.append(hit.message)
        elif ev == "note":
            self.notes.append(Fact("note", hit.message, None, self.evidence(hit), hit.rank, hit.pattern.id))

    def _error(self, hit: Hit) -> None:
        ev = hit.pattern.event
        if ev == "startup_frame":
            self.startup_frames += 1
            return
        if ev == "runtime_frame":
            self.runtime_frames += 1
            return
        if ev == "startup_failed":
            self.startup_markers.append(self.evidence(hit))
        if hit.level in ("DEBUG", "INFO", "WARNING", "WARN"):
            return  # a logged, handled exception is not fatal
        kind = "exception" if "type" in hit.values else "marker"
        err = FatalError(
            type=hit.values.get("type") or hit.values.get("marker"),
            message=hit.values.get("message"),
            evidence=self.evidence(hit),
            rank=hit.rank,
            kind=kind,
            consequence=hit.pattern.consequence,
            time=hit.time,
        )
        for seen in self.errors:
            if seen.type == err.type and seen.message == err.message:
                # the same exception printed by another rank or handler, or matched by a
                # second, more specific pattern that knows it is a consequence
                seen.consequence = seen.consequence or err.consequence
                return
        self.errors.append(err)


def _lowest(per_rank: dict[str | None, Fact]) -> Fact:
    ranks = sorted(per_rank, key=rank_key)
    first = per_rank[ranks[0]]
    values = {repr(per_rank[r].value) for r in ranks}
    if len(values) > 1:
        first.observations = [per_rank[r] for r in ranks]
    return first


def _order_errors(errors: list[FatalError]) -> list[FatalError]:
    """Root cause first: the first exception raised that is not a known consequence."""
    if not errors:
        return []
    def pick() -> FatalError:
        for want in (("exception", False), ("marker", False)):
            for e in errors:
                if (e.kind, e.consequence) == want:
                    return e
        return errors[0]
    root = pick()
    return [root] + [e for e in errors if e is not root]


def _outcome(c: _Collector, errors: list[FatalError]) -> str:
    ready = c.ready or c.first_serving
    fatal_line = min((e.evidence.line for e in errors), default=None)
    if fatal_line is not None:
        if ready is not None and ready.line < fatal_line:
            return "crashed_after_ready"
        if c.startup_markers or (c.startup_frames and not c.runtime_frames):
            return "failed_startup"
        if c.runtime_frames and not c.startup_frames:
            # the traceback runs through serving-only code: the engine was serving when it died
            return "crashed_after_ready"
        return "unknown"
    if ready is None:
        # a paste cut before the exception line: the markers and frames still tell the stage
        if c.startup_markers:
            return "failed_startup"
        if c.runtime_frames and not c.startup_frames:
            return "crashed_after_ready"
    return "ready" if ready is not None else "unknown"


def scan_stream(stream: BinaryIO, source: str, patterns: PatternSet | None = None,
                on_runtime: Callable[[RuntimeRow], None] | None = None,
                fast: bool | None = None,
                on_runtime_batch: Callable[[list[RuntimeRow]], None] | None = None,
                on_progress: Callable[[int], None] | None = None) -> ScanResult:
    """Scan a decompressed byte stream; see `scan_file`.

    `on_runtime_batch`, if given, receives the stats rows as lists (in file order, one list
    per chunk at most) instead of one `on_runtime` call per row. `on_progress` receives the
    number of bytes of each chunk read (a progress bar's increments).
    """
    patterns = patterns or load_all()
    scanner = Scanner(patterns)
    col = _Collector(source, on_runtime, on_runtime_batch)
    for hit in scanner.scan(stream, fast=fast, batches=True, progress=on_progress):
        if type(hit) is RuntimeBatch:
            col.add_batch(hit)
        else:
            col.add(hit)
    col.flush_rows()
    res = ScanResult(source=source)
    res.lines = scanner.lines_read
    votes = col.engine_votes
    if votes:
        best = max(votes.values())
        leaders = [e for e, v in votes.items() if v == best]
        res.engine = leaders[0] if len(leaders) == 1 else None
    engine_of = {p.id: p.engine for p in patterns.patterns}
    for section in ("meta", "requested", "effective"):
        target = getattr(res, section)
        for name, per_rank in col.sections[section].items():
            fact = _lowest(per_rank)
            if res.engine and fact.pattern and engine_of.get(fact.pattern, "any") not in (res.engine, "any"):
                continue  # a fact read by the other engine's pattern in this log
            target[name] = fact
    for name, fact in col.lists.items():
        res.effective[name] = fact
    res.runtime.update(sorted(col.peaks.items(), key=lambda kv: col.peak_first[kv[0]]))
    res.runtime.update(col.counts)
    res.runtime_rows = col.runtime_rows
    res.errors = _order_errors(col.errors)
    res.ready = col.ready or col.first_serving
    res.outcome = _outcome(col, res.errors)
    res.http_ok_after_fatal = scanner.http_after_fatal.count
    if scanner.http_after_fatal.first_line is not None:
        res.http_ok_after_fatal_evidence = Evidence(source, scanner.http_after_fatal.first_line,
                                                    scanner.http_after_fatal.first_raw or "")
    res.notes = col.notes
    _derive(res)
    return res


def _derive(res: ScanResult) -> None:
    """Facts FACTS.md defines as a sum of printed values, each from one line.

    SGLang prints the KV pool as `K size` + `V size` (or one `KV size` for MLA); the
    canonical `kv_cache_gib` is their sum, only when both come from the same line and rank.
    """
    if "kv_cache_gib" in res.effective:
        return
    k, v, kv = (res.effective.get(n) for n in ("k_size_gib", "v_size_gib", "kv_size_gib"))
    if k is not None and v is not None and k.evidence == v.evidence and k.rank == v.rank:
        res.effective["kv_cache_gib"] = Fact("kv_cache_gib", round(k.value + v.value, 6), "GiB", k.evidence, k.rank, k.pattern)
    elif kv is not None:
        res.effective["kv_cache_gib"] = Fact("kv_cache_gib", kv.value, "GiB", kv.evidence, kv.rank, kv.pattern)


def scan_file(path: str | Path, cmd: str | Path | None = None, patterns: PatternSet | None = None,
              on_runtime: Callable[[RuntimeRow], None] | None = None, fast: bool | None = None,
              on_progress: Callable[[int], None] | None = None) -> ScanResult:
    """Scan an engine log (plain, .gz, .zst or `-` for stdin) into facts and an outcome.

    Args:
        path: the log.
        cmd: a launch command file; by default a `cmd.sh` next to the log is used if present.
        patterns: the pattern set (the shipped one by default).
        on_runtime: called with every stats row, in file order (the archive stores them).
        fast: force the scanner's RE2 path on or off (tests compare both).
        on_progress: called with the number of (decompressed) bytes of each chunk read.

    Raises:
        InputError: the log or the command file cannot be read.
    """
    from forensics.logchecks import log_findings

    stream, source = open_log(path)
    with stream:
        res = scan_stream(stream, source, patterns, on_runtime, fast, on_progress=on_progress)
    cmd_path = Path(cmd) if cmd else None
    if cmd_path is None and source != "<stdin>":
        guess = Path(source).with_name("cmd.sh")
        if guess.is_file():
            cmd_path = guess
    if cmd_path is not None:
        apply_command(res, read_command(cmd_path))
    res.findings = log_findings(res)
    return res


def read_command(path: Path) -> LaunchCommand:
    from forensics.errors import InputError

    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError as exc:
        raise InputError(f"cannot read launch command {path}", exc.strerror or str(exc),
                         hint="pass --cmd with a readable file") from None
    return parse_command(text, str(path))


def apply_command(res: ScanResult, cmd: LaunchCommand) -> None:
    """The launch command is what the user asked for: it overrides the log's echo of it."""
    if res.engine is None and cmd.engine:
        res.engine = cmd.engine
    for key, value in cmd.args.items():
        res.requested[key] = Fact(key, value, None, cmd.evidence[key], None, "command")
    model = cmd.args.get("model") or cmd.args.get("model_path")
    if isinstance(model, str) and "model" not in res.meta:
        res.meta["model"] = Fact("model", model, None, cmd.evidence.get("model") or cmd.evidence["model_path"], None, "command")
