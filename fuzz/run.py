"""Coverage-guided fuzzing of the parsers with atheris (libFuzzer for Python).

    python fuzz/run.py TARGET [--seconds 600] [--corpus DIR] [--out DIR]

TARGET is one of: lines (envelope.split + the log scanner, both paths), paths (the Python
and the RE2/batch path of the scanner must give the same result and rows), repr (pyrepr),
command (launch commands), importers (every importer's sniff and read, and detect).

A target fails when a parser raises, breaks an invariant (a problem without file/line, a
row with unknown columns) or takes longer than SLOW_S on one input. Failures do not stop
the run: each distinct one (by exception type and innermost forensics frame) is saved as
OUT/TARGET/crash-<hash>.bin with its traceback in .txt, and the run goes on. Every few
seconds OUT/TARGET/stats.json holds the executions and failures so far; libFuzzer's closing
`Done N runs in S second(s)` line is the exact total.
The working corpus starts from the repository fixtures (cut to MAX_LEN bytes).
"""
from __future__ import annotations

import argparse
import atexit
import hashlib
import io
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

try:
    import atheris
except ImportError:  # not a project dependency: only this tool needs it
    sys.exit("fuzz/run.py needs atheris (libFuzzer for Python): pip install atheris")

ROOT = Path(__file__).resolve().parent.parent
MAX_LEN = 16384
SLOW_S = 5.0
TARGETS = ("lines", "paths", "repr", "command", "importers")

with atheris.instrument_imports(include=["forensics"]):
    from forensics import importers
    from forensics.importers.base import PROBLEM_KEYS, TABLE_COLUMNS
    from forensics.parsing import command, envelope, pyrepr
    from forensics.parsing.spec import load_all
    from forensics.scan import scan_stream


class Failure(Exception):
    """An invariant broken without an exception from the library."""


# ---------------------------------------------------------------- targets

_PATTERNS = None


def t_lines(data: bytes) -> None:
    global _PATTERNS
    if _PATTERNS is None:
        _PATTERNS = load_all()
    text = data.decode("utf-8", "replace")
    for line in text.splitlines()[:50]:
        sp = envelope.split(line)
        if not isinstance(sp.message, str):
            raise Failure("split returned a non-str message")
    fast = bool(data[:1]) and data[0] & 1 == 1
    res = scan_stream(io.BytesIO(data), "fuzz.log", _PATTERNS, fast=fast)
    json.dumps([f.value for f in res.effective.values()], default=str)
    for e in res.errors:
        if e.evidence.line < 1:
            raise Failure(f"error cites line {e.evidence.line}")


def t_paths(data: bytes) -> None:
    global _PATTERNS
    if _PATTERNS is None:
        _PATTERNS = load_all()
    got = []
    for fast in (False, True):
        rows: list = []
        res = scan_stream(io.BytesIO(data), "fuzz.log", _PATTERNS, on_runtime=rows.append, fast=fast)
        got.append((repr(res), rows))
    if got[0] != got[1]:
        raise Failure("the Python and the RE2 path disagree")


def t_repr(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    name = fdp.PickValueInList(["ServerArgs", "EngineArgs", "Config", "x", ""])
    text = fdp.ConsumeUnicodeNoSurrogates(len(data))
    r = pyrepr.call(text, name)
    if r is not None and not isinstance(r, dict):
        raise Failure("call returned a non-dict")
    m = pyrepr.mapping(text)
    if m is not None and not all(isinstance(k, str) for k in m):
        raise Failure("mapping returned a non-str key")
    pyrepr.kwargs(text)
    pyrepr.split_top(text)


def t_command(data: bytes) -> None:
    text = data.decode("utf-8", "replace")
    cmd = command.parse_command(text, "cmd.sh")
    lines = text.splitlines()
    for key in cmd.args:
        ev = cmd.evidence[key]
        if not (1 <= ev.line <= max(1, len(lines))):
            raise Failure(f"evidence line {ev.line} outside 1..{len(lines)}")
    json.dumps(cmd.args, default=str)


_NAMES = ["result.json", "bench.jsonl", "gpu.csv", "metrics.prom", "nvidia-smi.txt", "profile_export.json",
          "benchmarks.json", "individual_responses.json", "probes.jsonl", "x"]


def t_importers(data: bytes) -> None:
    name = _NAMES[data[0] % len(_NAMES)] if data else "x"
    body = data[1:]
    importers.detect(body[: importers.HEAD_BYTES], name)
    for imp in importers.IMPORTERS:
        imp.sniff(body[: importers.HEAD_BYTES], name)
        res = imp.read(body, name)
        for p in res.problems:
            if tuple(p) != PROBLEM_KEYS or p["file"] != name or not isinstance(p["message"], str):
                raise Failure(f"{imp.TOOL}: bad problem {p!r}")
            if p["line"] is not None and p["line"] < 1:
                raise Failure(f"{imp.TOOL}: problem line {p['line']}")
        for table, cols in TABLE_COLUMNS.items():
            for row in getattr(res, table):
                if set(row) - set(cols) - {"line"}:
                    raise Failure(f"{imp.TOOL}: {table} row with unknown columns {sorted(set(row) - set(cols))}")


FUNCS = {"lines": t_lines, "paths": t_paths, "repr": t_repr, "command": t_command, "importers": t_importers}


# ---------------------------------------------------------------- seeds

def _seed_files(target: str) -> list[Path]:
    fx = ROOT / "fixtures"
    if target in ("lines", "paths"):
        return sorted(fx.glob("corpus/*/*.log"))
    if target == "repr":
        return sorted(fx.glob("corpus/*/*.log"))  # ServerArgs(...) and config lines live in the logs
    if target == "command":
        return sorted(fx.rglob("cmd.sh"))
    return sorted(p for p in fx.glob("results/*") if p.name != "README.md")


def _prepare_corpus(target: str, corpus: Path) -> None:
    corpus.mkdir(parents=True, exist_ok=True)
    for i, src in enumerate(_seed_files(target)):
        data = src.read_bytes()
        if target == "repr":
            chunks = [ln for ln in data.splitlines() if b"(" in ln or b"{" in ln][:20]
        else:
            chunks = [data[:MAX_LEN]]
        for j, chunk in enumerate(chunks):
            if target == "importers":
                chunk = bytes([i % len(_NAMES)]) + chunk[: MAX_LEN - 1]
            (corpus / f"seed-{i:03d}-{j:02d}").write_bytes(chunk[:MAX_LEN])


# ---------------------------------------------------------------- harness

class Harness:
    def __init__(self, target: str, out: Path) -> None:
        self.target, self.fn, self.out = target, FUNCS[target], out
        self.execs = 0
        self.failures: dict[str, dict] = {}
        self.slow: dict[str, float] = {}
        self.started = time.time()
        self.last_write = 0.0
        out.mkdir(parents=True, exist_ok=True)

    def write_stats(self) -> None:
        stats = {"target": self.target, "executions": self.execs, "seconds": round(time.time() - self.started, 1),
                 "failures": len(self.failures), "distinct": sorted(self.failures), "slow_inputs": len(self.slow)}
        tmp = self.out / "stats.json.tmp"
        tmp.write_text(json.dumps(stats, indent=1))
        os.replace(tmp, self.out / "stats.json")

    def __call__(self, data: bytes) -> None:
        self.execs += 1
        t0 = time.perf_counter()
        try:
            self.fn(data)
        except Exception as exc:  # noqa: BLE001 - every exception out of a parser is a finding
            self._record(data, exc)
        dt = time.perf_counter() - t0
        if dt > SLOW_S:
            key = hashlib.sha1(data).hexdigest()[:12]
            if key not in self.slow:
                self.slow[key] = dt
                (self.out / f"slow-{key}.bin").write_bytes(data)
                (self.out / f"slow-{key}.txt").write_text(f"{dt:.2f} s for {len(data)} bytes\n")
        now = time.time()
        if now - self.last_write > 5:
            self.last_write = now
            self.write_stats()

    def _record(self, data: bytes, exc: Exception) -> None:
        tb = traceback.extract_tb(exc.__traceback__)
        ours = [f for f in tb if "/forensics/" in f.filename] or tb
        where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
        key = f"{type(exc).__name__}@{where}"
        if key in self.failures:
            self.failures[key]["count"] += 1
            return
        h = hashlib.sha1(data).hexdigest()[:12]
        self.failures[key] = {"count": 1, "file": f"crash-{h}.bin"}
        (self.out / f"crash-{h}.bin").write_bytes(data)
        (self.out / f"crash-{h}.txt").write_text(key + "\n" + "".join(traceback.format_exception(exc)))
        print(f"\n== {self.target}: new failure {key} -> {self.out / f'crash-{h}.bin'}", file=sys.stderr, flush=True)
        self.write_stats()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", choices=TARGETS)
    ap.add_argument("--seconds", type=int, default=600)
    ap.add_argument("--corpus", type=Path, default=None, help="working corpus (default: a temp folder)")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "forensics-fuzz",
                    help="where failures and stats.json go")
    ap.add_argument("--replay", type=Path, nargs="*", help="run these inputs once and exit")
    args, rest = ap.parse_known_args(argv)
    harness = Harness(args.target, args.out / args.target)
    if args.replay is not None:
        for p in args.replay:
            harness(p.read_bytes())
        harness.write_stats()
        print(json.dumps(json.loads((harness.out / "stats.json").read_text())))
        return
    corpus = args.corpus or Path(tempfile.gettempdir()) / "forensics-fuzz" / f"corpus-{args.target}"
    _prepare_corpus(args.target, corpus)
    atexit.register(harness.write_stats)
    libfuzzer = [sys.argv[0], f"-max_total_time={args.seconds}", f"-max_len={MAX_LEN}",
                 "-timeout=60", "-rss_limit_mb=4096", "-print_final_stats=1", *rest, str(corpus)]
    atheris.Setup(libfuzzer, harness)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
