"""Benchmark: the sampler's own CPU cost per sample, over the fake 8-GPU fleet; prints a markdown section.

NVML's own cost on a real GPU is not in these numbers (the fake answers from memory); they are
what forensics adds per tick: building rows, decoding reasons, and the fsynced journal append.
Run: .venv/bin/python bench/bench_sampler.py [TICKS]
"""
from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from forensics.gpu import sampler  # noqa: E402
from tests.fake_nvml import FakeNvml  # noqa: E402


def cpu(fn, n: int) -> float:
    """CPU seconds (time.process_time) for n calls of fn."""
    t0 = time.process_time()
    for _ in range(n):
        fn()
    return time.process_time() - t0


def main(ticks: int = 2000) -> str:
    fake = FakeNvml(ROOT / "fixtures" / "nvml" / "bench-8x-h100.toml")
    devices = fake.devices()
    tally = sampler.Tally()
    build = cpu(lambda: sampler.take(fake, devices, tally), ticks)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "gpu.parquet"
        journal = sampler.Journal(sampler.journal_path(out))
        both = cpu(lambda: journal.append(sampler.take(fake, devices, tally)), ticks)
        journal.close()
        t0 = time.process_time()
        n, _ = sampler.recover(out)
        finalise = time.process_time() - t0
        size = out.stat().st_size
    us = lambda s, k: f"{s / k * 1e6:,.0f} µs"  # noqa: E731
    return "\n".join([
        "## GPU sampler: CPU cost per sample",
        "",
        f"`bench/bench_sampler.py`: fake fleet of {len(devices)} GPUs (`fixtures/nvml/bench-8x-h100.toml`), "
        f"{ticks} samples, CPU time by `time.process_time()`; NVML's own cost on a real GPU is not included.",
        "",
        "| step | per sample (8 GPUs) | per GPU row | CPU share at `--interval 1s` |",
        "|---|---:|---:|---:|",
        f"| read + build rows | {us(build, ticks)} | {us(build, ticks * len(devices))} | {build / ticks * 100:.3f} % |",
        f"| read + build rows + journal append (flush + fsync) | {us(both, ticks)} | "
        f"{us(both, ticks * len(devices))} | {both / ticks * 100:.3f} % |",
        f"| journal -> Parquet at stop, amortised ({n:,} rows, {size / 1024:,.0f} KiB, "
        f"{finalise * 1e3:,.0f} ms in all) | {us(finalise, ticks)} | {us(finalise, n)} | once, at stop |",
        "",
        f"Python {sys.version.split()[0]}, {sys.platform}.",
    ])


if __name__ == "__main__":
    print(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
