#!/usr/bin/env python3
"""CPU time of the scanner's worker pass alone (keyword pass + batch path), per 4 MiB of log.

Reads the first chunks of LOG into memory, then runs `ChunkPasser` over them on one thread,
ROUNDS times, and prints the fastest round's CPU time per 4 MiB of log. No reading, no main
thread, no threads: the figure to compare two versions of the pass or two chunk sizes in the
same session (docs/scan-design.md quotes it).

    python bench/bench_pass.py LOG [--chunk 6M] [--bytes 384M] [--rounds 7]
"""
from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    return int(float(text[:-1]) * UNITS[text[-1].upper()]) if text[-1].upper() in UNITS else int(text)


def main() -> None:
    from forensics.parsing.scanner import CHUNK, Scanner, _iter_chunks
    from forensics.parsing.spec import load_all

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--chunk", default=str(CHUNK), help=f"chunk size (default {CHUNK >> 20}M, the scanner's)")
    ap.add_argument("--bytes", default="384M", help="how much of the log to hold in memory and pass")
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    chunk, total = parse_size(args.chunk), parse_size(args.bytes)
    passer = Scanner(load_all())._passer()
    with open(args.log, "rb") as f:
        chunks = list(itertools.islice(_iter_chunks(f, itertools.repeat(chunk)), max(1, total // chunk)))
    nbytes = sum(len(c) for c in chunks)
    best = float("inf")
    for _ in range(args.rounds):
        t0 = time.process_time()
        for c in chunks:
            passer(c)
        best = min(best, time.process_time() - t0)
    print(f"{best * 1000 * (4 << 20) / nbytes:.2f} ms CPU per 4 MiB of log "
          f"({len(chunks)} chunks of {chunk >> 20} MiB, {nbytes:,} bytes, fastest of {args.rounds} rounds)")


if __name__ == "__main__":
    main()
