#!/usr/bin/env python3
"""Campaign-scale benchmarks of `forensics scan`; writes BENCHMARKS.md.

Every figure is measured beside its baseline in the same run (the machine is shared and
noisy), as the median of N runs, and reported as a ratio:

* scan time: `forensics scan --format json LOG` against `grep -cE KEYWORDS LOG` (the literal
  keywords the patterns need), at 1x, 4x and 16x sizes;
* peak memory (max RSS of the child) of scan at each size and on the largest log that fits;
* startup: `forensics --help` and `forensics scan` on a small log, against `python -c pass`.

    python bench/run.py            # 64M, 256M, 1G; peak RSS on 4G if the disk allows
    python bench/run.py --quick    # 16M, 64M, 256M; peak RSS on 1G

Only the sections above are rewritten; other sections of the output file (other benchmarks'
results) are kept after them.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAD = ROOT / "fixtures" / "corpus" / "vllm" / "04_v1-small-model-kv-tokens-progressbars.log"
SMALL_LOG = HEAD
PY = sys.executable
FORENSICS = str(Path(PY).with_name("forensics"))
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text: str) -> int:
    return int(float(text[:-1]) * UNITS[text[-1].upper()]) if text[-1].upper() in UNITS else int(text)


def keywords_regex() -> str:
    sys.path.insert(0, str(ROOT))
    from forensics.parsing.spec import load_all

    kws = sorted(load_all().by_keyword(), key=len, reverse=True)
    return "|".join(re.sub(r"([][\\.^$|?*+(){}])", r"\\\1", k) for k in kws)


def run(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and the child's max RSS in KiB (wait4 gives the rusage of that child only)."""
    t0 = time.perf_counter()
    # stdout to a pipe, not /dev/null: GNU grep stops at the first match when writing to /dev/null
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode() if p.stderr else ""
    if p.returncode not in (0, 1):  # grep -c exits 1 when nothing matches
        raise SystemExit(f"{cmd[0]} failed ({p.returncode}): {err[-2000:]}")
    return wall, ru.ru_maxrss


def medians(cmds: dict[str, list[str]], n: int) -> dict[str, tuple[float, int]]:
    """Median wall and max RSS of each command, runs interleaved so that noise hits all alike."""
    times: dict[str, list[float]] = {k: [] for k in cmds}
    rss: dict[str, int] = {k: 0 for k in cmds}
    for _ in range(n):
        for name, cmd in cmds.items():
            w, r = run(cmd)
            times[name].append(w)
            rss[name] = max(rss[name], r)
    return {k: (statistics.median(v), rss[k]) for k, v in times.items()}


def make_log(path: Path, size: str) -> None:
    with path.open("wb") as f:
        subprocess.run([PY, str(ROOT / "bench" / "make_big_log.py"), "--size", size, "--head", str(HEAD), "--crash"],
                       stdout=f, check=True)
    # Write the new log out and read it once, so that no run is timed while the kernel is
    # still flushing it to disk, and grep and scan both read it from the page cache.
    os.sync()
    with path.open("rb") as f:
        while f.read(16 << 20):
            pass


def machine() -> dict[str, str]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"nproc": str(os.cpu_count()), "cpu": model, "python": platform.python_version(),
            "grep": subprocess.run(["grep", "--version"], capture_output=True, text=True).stdout.splitlines()[0]}


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def growth(xs: list[float], sizes: list[int]) -> str:
    """Per-step ratio of the figure against the ratio of the sizes (<= size ratio: linear or better)."""
    parts = []
    for i in range(1, len(xs)):
        parts.append(f"x{sizes[i] / sizes[i - 1]:.0f} size -> x{xs[i] / xs[i - 1]:.2f}")
    return "; ".join(parts)


OWN_SECTIONS = ("## Machine", "## Scan time", "## Peak memory", "## Startup")


def keep_other_sections(old: str, new: str) -> str:
    """`new` followed by the sections of `old` that this script does not write (other benchmarks')."""
    keep, on = [], False
    for line in old.splitlines():
        if line.startswith("## "):
            on = not line.startswith(OWN_SECTIONS)
        if on:
            keep.append(line)
    return new.rstrip("\n") + ("\n\n" + "\n".join(keep).rstrip("\n") + "\n" if keep else "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="16M/64M/256M and peak RSS on 1G")
    ap.add_argument("--sizes", help="comma-separated runtime-traffic sizes, e.g. 64M,256M,1G")
    ap.add_argument("--rss-size", help="size of the peak-memory log (default 4G, 1G with --quick)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tmp", default=tempfile.gettempdir())
    ap.add_argument("--out", default=str(ROOT / "BENCHMARKS.md"))
    ap.add_argument("--note", default="", help="a line to put under the title")
    args = ap.parse_args()
    sizes = (args.sizes or ("16M,64M,256M" if args.quick else "64M,256M,1G")).split(",")
    rss_size = args.rss_size or ("1G" if args.quick else "4G")
    load_start = _loadavg()
    work = Path(tempfile.mkdtemp(prefix="forensics-bench-", dir=args.tmp))
    kw = keywords_regex()
    rows = []
    try:
        # startup
        st = medians({
            "python -c pass": [PY, "-c", "pass"],
            "forensics --help": [FORENSICS, "--help"],
            "forensics scan (small log)": [FORENSICS, "scan", "--format", "json", str(SMALL_LOG)],
        }, args.runs)
        # scan against grep
        for size in sizes:
            log = work / f"{size}.log"
            make_log(log, size)
            nbytes = log.stat().st_size
            r = medians({"grep": ["grep", "-cE", kw, str(log)],
                         "scan": [FORENSICS, "scan", "--format", "json", str(log)]}, args.runs)
            rows.append((size, nbytes, r["grep"][0], r["scan"][0], r["scan"][1], r["grep"][1]))
            print(f"{size}: grep {r['grep'][0]:.2f}s scan {r['scan'][0]:.2f}s ({r['scan'][0] / r['grep'][0]:.1f}x) "
                  f"rss {r['scan'][1] / 1024:.0f} MiB", flush=True)
            log.unlink()
        # peak memory on the largest log that fits
        need = parse_size(rss_size) + (64 << 20)
        free = shutil.disk_usage(work).free
        big_note = ""
        big_size = rss_size
        if free < need + (2 << 30):
            fit = max(1, (free - (2 << 30)) >> 30)
            big_note = f"{rss_size} did not fit on {args.tmp} ({free >> 30} GiB free): measured {fit}G instead."
            big_size = f"{fit}G"
        log = work / f"{big_size}.log"
        make_log(log, big_size)
        big_bytes = log.stat().st_size
        bw, brss = run([FORENSICS, "scan", "--format", "json", str(log)])
        gw, _ = run(["grep", "-cE", kw, str(log)])
        print(f"{big_size}: scan {bw:.1f}s rss {brss / 1024:.0f} MiB; grep {gw:.1f}s", flush=True)
        log.unlink()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    m = machine()
    load_end = _loadavg()
    out = ["# Benchmarks", "",
           "Written by `bench/run.py`" + (" --quick" if args.quick else "") + f" on {time.strftime('%Y-%m-%d %H:%M')}. "
           "Each figure is measured beside its baseline in the same run, runs interleaved; "
           f"times are medians of {args.runs}. Logs come from `bench/make_big_log.py --head "
           f"{HEAD.relative_to(ROOT)} --crash` (a real startup log, then vLLM runtime traffic: "
           "access lines, one stats line per 40, preemption warnings; a crash at the end).", ""]
    if args.note:
        out += [args.note, ""]
    out += ["## Machine", "", f"- nproc: {m['nproc']}", f"- CPU: {m['cpu']}", f"- Python: {m['python']}",
            f"- baseline: {m['grep']}, `grep -cE` over the alternation of the {kw.count('|') + 1} literal pattern keywords",
            f"- load average (1, 5, 15 min) at the start: {load_start}; at the end: {load_end}",
            "", "## Scan time against grep (target: scan <= 2x grep)", "",
            "| size | bytes | grep -cE (s) | forensics scan (s) | scan / grep | scan MB/s | scan max RSS (MiB) |",
            "|---|---:|---:|---:|---:|---:|---:|"]
    for size, nbytes, g, s, rss, _ in rows:
        out.append(f"| {size} | {nbytes:,} | {g:.3f} | {s:.3f} | {s / g:.1f}x | {nbytes / s / 1e6:.0f} | {rss / 1024:.0f} |")
    nb = [r[1] for r in rows]
    out += ["", "Growth with input (a figure growing by no more than the size: linear or better):", "",
            f"- grep time: {growth([r[2] for r in rows], nb)}",
            f"- scan time: {growth([r[3] for r in rows], nb)}",
            f"- scan / grep ratio: {', '.join(f'{r[3] / r[2]:.1f}x' for r in rows)}",
            f"- scan max RSS: {growth([r[4] for r in rows], nb)}",
            "", "## Peak memory (target: under 200 MiB on a 4 GiB log, independent of size)", "",
            "| log | bytes | scan max RSS (MiB) | scan wall (s, one run) | grep wall (s, one run) |", "|---|---:|---:|---:|---:|",
            f"| {big_size} | {big_bytes:,} | {brss / 1024:.0f} | {bw:.1f} | {gw:.1f} |"]
    if big_note:
        out += ["", big_note]
    out += ["", "## Startup (target: under 0.3 s wall)", "",
            "| command | median wall (s) | baseline `python -c pass` (s) | ratio |", "|---|---:|---:|---:|"]
    base = st["python -c pass"][0]
    for name in ("forensics --help", "forensics scan (small log)"):
        out.append(f"| `{name}` | {st[name][0]:.3f} | {base:.3f} | {st[name][0] / base:.1f}x |")
    out += ["", f"The small log is `{SMALL_LOG.relative_to(ROOT)}` ({SMALL_LOG.stat().st_size:,} bytes).", ""]
    target = Path(args.out)
    text = "\n".join(out)
    if target.exists():
        text = keep_other_sections(target.read_text(), text)
    target.write_text(text)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
