"""The scanner's two prefilter paths (Python `re` and RE2 through pyarrow) find the same hits.

Speed is measured by bench/run.py, never here; these tests pin behaviour only.
"""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from forensics.parsing import scanner as scanner_mod
from forensics.parsing.scanner import Scanner
from forensics.parsing.spec import load_all

ROOT = Path(__file__).resolve().parent.parent
CORPUS = sorted((ROOT / "fixtures" / "corpus").glob("*/*.log"))
MAKE_BIG_LOG = ROOT / "bench" / "make_big_log.py"
HEAD = ROOT / "fixtures" / "corpus" / "vllm" / "04_v1-small-model-kv-tokens-progressbars.log"


def _hits(data: bytes, fast: bool | None):
    sc = Scanner(load_all())
    hits = [(h.line, h.pattern.id, h.values, h.raw, h.rank, h.level, h.time) for h in sc.scan(io.BytesIO(data), fast=fast)]
    http = sc.http_after_fatal
    return hits, sc.lines_read, (http.count, http.first_line, http.first_raw)


def _reference(data: bytes):
    """Hits by brute force: every line, every pattern, no prefilter and no chunks."""
    from forensics.parsing.envelope import split

    out = []
    pats = load_all().patterns
    by_kw = load_all().by_keyword()
    for n, raw in enumerate(data.split(b"\n"), 1):
        text = raw.decode("utf-8", "replace")
        for seg in text.split("\r"):
            if not seg.strip():
                continue
            sp = split(seg)
            for kw, group in by_kw.items():
                if kw not in seg:
                    continue
                for p in group:
                    if p.keyword in sp.message and (v := p.extract(sp.message)) is not None:
                        out.append((n, p.id, v))
    assert pats
    return out


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_python_and_re2_paths_agree_on_corpus(path: Path) -> None:
    data = path.read_bytes()
    slow = _hits(data, fast=False)
    fast = _hits(data, fast=True)
    assert slow == fast
    assert [h[:3] for h in slow[0]] == _reference(data)


@pytest.fixture(scope="module")
def synthetic_log(tmp_path_factory) -> bytes:
    out = tmp_path_factory.mktemp("big") / "synthetic.log"
    with out.open("wb") as f:
        subprocess.run([sys.executable, str(MAKE_BIG_LOG), "--size", "4M", "--head", str(HEAD), "--crash"],
                       stdout=f, check=True)
    return out.read_bytes()


def test_paths_agree_on_synthetic_log(synthetic_log: bytes) -> None:
    assert len(synthetic_log) > 4 << 20
    slow = _hits(synthetic_log, fast=False)
    fast = _hits(synthetic_log, fast=True)
    default = _hits(synthetic_log, fast=None)
    assert slow == fast == default
    hits, lines, http = slow
    assert lines == synthetic_log.count(b"\n")
    assert sum(1 for h in hits if h[1].endswith("throughput") or "Avg prompt throughput" in h[3]) > 1000
    assert http[0] == 0  # the crash is the last thing in the log: no HTTP 200 after it


@pytest.mark.parametrize("chunk", [64, 1000, 4096])
def test_line_numbers_across_chunk_boundaries(monkeypatch, synthetic_log: bytes, chunk: int) -> None:
    data = synthetic_log[: 300_000]
    data = data[: data.rfind(b"\n") + 1]
    want = _hits(data, fast=False)
    monkeypatch.setattr(scanner_mod, "CHUNK", chunk)
    monkeypatch.setattr(scanner_mod, "SMALL", chunk)
    for fast in (False, True, None):
        got = _hits(data, fast=fast)
        assert got == want, f"fast={fast} chunk={chunk}"
    assert [h[:3] for h in want[0]] == _reference(data)


def test_line_numbers_with_carriage_returns_and_no_final_newline(monkeypatch) -> None:
    line = HEAD.read_bytes().split(b"\n")
    data = b"\r\n".join(line[:40]) + b"\n" + b"x" * 300 + b"\n" + b"\n".join(line[40:80])
    want = _hits(data, fast=False)
    monkeypatch.setattr(scanner_mod, "CHUNK", 257)
    monkeypatch.setattr(scanner_mod, "SMALL", 257)
    for fast in (False, True, None):
        assert _hits(data, fast=fast) == want
