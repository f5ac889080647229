#!/usr/bin/env python3
"""The keyword prefilter, done six ways, on one log (default: 200 MB from make_big_log.py).

Each method finds the lines that contain any pattern keyword and reports how many; they must
agree. Slow methods run on a prefix (--sample) and are scaled to the whole file; the table
says which. `grep -cE` over the same alternation is the baseline. Single-threaded: these
are the per-core costs that docs/scan-design.md compares.

    python bench/alternatives.py [--log FILE] [--size 200M] [--sample 16M]
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from forensics.parsing.scanner import Prefilter, iter_chunks  # noqa: E402
from forensics.parsing.vectorised import keyword_alternation  # noqa: E402
from forensics.parsing.spec import load_all  # noqa: E402

CHUNK = 4 << 20


def chunks(data: bytes):
    import io
    return list(iter_chunks(io.BytesIO(data), CHUNK))


def m_python_lines(data, kws, pats):
    """Per line, every pattern regex (no prefilter): the naive loop."""
    n = 0
    for line in data.decode("utf-8", "replace").split("\n"):
        if any(p.regex.search(line) for p in pats):
            n += 1
    return n


def m_python_alternation(data, kws, pats):
    pf = Prefilter(kws)
    return sum(1 for c in chunks(data) for _ in pf.python(c, 1))


def m_bytes_count(data, kws, pats):
    """Per keyword, bytes.find over the chunk; candidate lines = distinct line starts."""
    n = 0
    bkws = [k.encode() for k in kws]
    for c in chunks(data):
        starts = set()
        for k in bkws:
            i = c.find(k)
            while i >= 0:
                s = c.rfind(b"\n", 0, i) + 1
                starts.add(s)
                e = c.find(b"\n", i)
                i = c.find(k, e if e >= 0 else len(c))
        n += len(starts)
    return n


def m_duckdb(data, kws, pats):
    import duckdb

    alt = keyword_alternation(kws)
    con = duckdb.connect()
    con.execute("SET threads=1")
    n = 0
    for c in chunks(data):
        n += con.execute("SELECT len(regexp_extract_all($s, $p))", {"s": c.decode("utf-8", "replace"),
                                                                    "p": f"[^\\n]*(?:{alt})[^\\n]*"}).fetchone()[0]
    return n


def m_arrow_split_regex(data, kws, pats):
    """The previous scanner: split_pattern_regex over `[^\\n]*(?:kw|...)[^\\n]*` per chunk."""
    import pyarrow as pa
    import pyarrow.compute as pc

    whole_line = f"[^\\n]*(?:{keyword_alternation(kws)})[^\\n]*"
    n = 0
    for c in chunks(data):
        n += len(pc.split_pattern_regex(pa.array([c], pa.large_binary()), whole_line)[0].values) - 1
    return n


def m_arrow_per_line(data, kws, pats):
    """The current scanner's keyword pass: split lines, one RE2 test per line, indices of the hits."""
    import pyarrow as pa
    import pyarrow.compute as pc

    alt = keyword_alternation(kws)
    n = 0
    for c in chunks(data):
        lines = pc.split_pattern(pa.array([c], pa.large_binary()), "\n")[0].values
        n += len(pc.indices_nonzero(pc.match_substring_regex(lines, alt)))
    return n


METHODS = [
    ("per-line Python regex loop (every pattern on every line)", m_python_lines, True),
    ("Python `re` keyword alternation over the chunk", m_python_alternation, True),
    ("per-keyword bytes.find over the chunk", m_bytes_count, True),
    ("DuckDB regexp_extract_all over the chunk (1 thread)", m_duckdb, True),
    ("pyarrow split_pattern_regex `[^\\n]*(kw|..)[^\\n]*` (previous)", m_arrow_split_regex, False),
    ("pyarrow split lines + per-line match_substring_regex (current)", m_arrow_per_line, False),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log")
    ap.add_argument("--size", default="200M")
    ap.add_argument("--sample", default="16M", help="prefix the slow methods run on")
    args = ap.parse_args()
    tmp = None
    if args.log:
        path = Path(args.log)
    else:
        tmp = Path(tempfile.mkdtemp()) / "alt.log"
        with tmp.open("wb") as f:
            subprocess.run([sys.executable, str(ROOT / "bench" / "make_big_log.py"), "--size", args.size, "--head",
                            str(ROOT / "fixtures/corpus/vllm/04_v1-small-model-kv-tokens-progressbars.log"), "--crash"],
                           stdout=f, check=True)
        path = tmp
    data = path.read_bytes()
    sample_n = int(args.sample.rstrip("M")) << 20
    sample = data[:sample_n]
    sample = sample[: sample.rfind(b"\n") + 1]
    pats = load_all().patterns
    kws = list(load_all().by_keyword())
    alt = "|".join(re.sub(r"([][\\.^$|?*+(){}])", r"\\\1", k) for k in sorted(kws, key=len, reverse=True))
    t0 = time.perf_counter()
    g = subprocess.run(["grep", "-cE", alt, str(path)], capture_output=True, text=True)
    gt = time.perf_counter() - t0
    print(f"| `grep -cE` (baseline) | whole | {gt:.2f} | {len(data) / gt / 1e6:.0f} | 1.0x | {g.stdout.strip()} |")
    for name, fn, slow in METHODS:
        d = sample if slow else data
        t0 = time.perf_counter()
        n = fn(d, kws, pats)
        t = time.perf_counter() - t0
        full = t * len(data) / len(d)
        where = f"{len(d) >> 20} MiB prefix, scaled" if slow else "whole"
        print(f"| {name} | {where} | {full:.2f} | {len(d) / t / 1e6:.0f} | {full / gt:.0f}x | {n} |", flush=True)
    if tmp:
        tmp.unlink()


if __name__ == "__main__":
    main()
