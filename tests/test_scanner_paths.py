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


@pytest.mark.parametrize("chunk", [300, 4 << 20])
def test_http_200_after_the_fatal_line_counted_alike(monkeypatch, chunk: int) -> None:
    ok = '(APIServer pid=1) INFO:     127.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OK'
    fatal = ("(APIServer pid=1) ERROR 10-10 23:59:58 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: "
             "EngineCore encountered an issue. See stack trace (above) for the root cause.")
    data = "\n".join([ok] * 7 + [fatal, "x", ok, "y", ok, ok] + ["z"] * 9 + [ok]).encode() + b"\n"
    monkeypatch.setattr(scanner_mod, "CHUNK", chunk)
    monkeypatch.setattr(scanner_mod, "SMALL", chunk)
    got = {fast: _hits(data, fast)[2] for fast in (False, True)}
    assert got[False] == got[True] == (4, 10, ok)


def _stats(prefix: str, running: int, kv: float, tail: str = "") -> str:
    return (f"{prefix}INFO 10-10 05:00:{running % 60:02d} [loggers.py:123] Engine 000: Avg prompt throughput: 1,234.5 tokens/s, "
            f"Avg generation throughput: 99.0 tokens/s, Running: {running} reqs, Waiting: 3 reqs, "
            f"GPU KV cache usage: {kv}%, Prefix cache hit rate: 1.0%{tail}")


def _mixed_log(synthetic_log: bytes) -> bytes:
    """Stats lines that take the vectorised path and ones that cannot, with tied peaks between them."""
    body = synthetic_log[:200_000]
    body = body[: body.rfind(b"\n") + 1].decode()
    extra = [
        _stats("(APIServer pid=1) ", 70, 99.5, tail="  "),               # trailing blank: Python path
        _stats("\x1b[32m(APIServer pid=1) ", 70, 99.5),                    # ANSI: Python path
        _stats("(VllmWorker rank=3 pid=9) ", 70, 99.5),                    # vectorised, same peak later
        _stats("(VllmWorkerProcess pid=77) ", 71, 12.0),
        _stats("", 72, 100.0, tail=" é"),                                  # non-ASCII: Python path
        _stats("(APIServer pid=1) ", 72, 100.0),                           # tie after a Python-path line
        "INFO 04-20 17:17:49 [metrics.py:488] Avg prompt throughput: 2.2 tokens/s, Avg generation throughput: 0.2 tokens/s, "
        "Running: 73 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 0.0%, CPU KV cache usage: 0.0%.",
        _stats("(APIServer pid=1) ", 5, 1.0).replace("Waiting: 3 reqs", "Waiting: 99999999999999999999 reqs"),
        "docker-svc-1  | " + _stats("(APIServer pid=1) ", 6, 2.0),       # compose prefix: Python path
        _stats("(APIServer pid=1) ", 74, 101.0),                           # vectorised peak first,
        _stats("(APIServer pid=1) ", 74, 101.0, tail=" "),                 # then a tie on the Python path
        # the keyword twice: the first occurrence does not match, the second does (leftmost match)
        "(APIServer pid=1) INFO 10-10 05:01:00 [loggers.py:123] Avg prompt throughput: n/a; "
        + _stats("", 75, 3.0).split("] ", 1)[1],
        # a field text RE2 finds but Python's float() would refuse: that line goes to Python whole
        "INFO 10-10 05:01:01 [scheduler.py:9] new fill batch. #seq: 1. #cached_token: 330. #new_token: 2172. "
        "#remaining_req: 57. #running_req: 9. tree_cache_hit_rate: 69.1.6%",
        "INFO 10-10 05:01:02 [scheduler.py:9] new fill batch. #seq: 2. #cached_token: 0. #new_token: 12. "
        "#remaining_req: 3. #running_req: 76. tree_cache_hit_rate: 1.5%",
        # a float text longer than the batch path converts: Python path
        _stats("(APIServer pid=1) ", 8, 2.0).replace("1,234.5", "1" * 70 + ".5"),
        # a keyword overlapping the vectorised one ("Exception" + "new fill batch."): Python path
        "INFO 10-10 05:01:03 [scheduler.py:9] Exceptionew fill batch. #seq: 3. #cached_token: 0. #new_token: 12. "
        "#remaining_req: 3. #running_req: 78.",
        # a CRLF line: batch path without its `\r`, as Python reads it; and a `\r` inside: Python path
        _stats("(APIServer pid=1) ", 79, 5.0) + "\r",
        _stats("(APIServer pid=1) ", 80, 6.0).replace("Waiting", "\rWaiting"),
        _stats("(APIServer pid=1) ", 81, 7.0, tail=" ") + "\r",
        # another keyword on the line: Python path
        _stats("(APIServer pid=1) ", 77, 4.0, tail=" EngineDeadError"),
    ]
    lines = body.splitlines()
    step = max(1, len(lines) // (len(extra) + 1))
    for k, line in enumerate(extra):
        lines.insert((k + 1) * step, line)
    return ("\n".join(lines) + "\n").encode()


@pytest.mark.parametrize("chunk", [1000, 4 << 20])
def test_scan_results_and_rows_agree_across_paths(monkeypatch, synthetic_log: bytes, chunk: int) -> None:
    """Facts, peaks with their evidence, errors, outcome and every runtime row, in order."""
    from forensics.scan import scan_stream

    data = _mixed_log(synthetic_log)
    monkeypatch.setattr(scanner_mod, "CHUNK", chunk)
    monkeypatch.setattr(scanner_mod, "SMALL", chunk)
    out = []
    for fast in (False, True, None):
        rows: list = []
        batched: list = []
        res = scan_stream(io.BytesIO(data), "x.log", on_runtime=rows.append, fast=fast)
        res2 = scan_stream(io.BytesIO(data), "x.log", on_runtime_batch=batched.extend, fast=fast)
        assert repr(res) == repr(res2) and rows == batched
        out.append((repr(res), rows))
    assert out[0] == out[1] == out[2]
    res_rows = out[0][1]
    assert [r.line for r in res_rows] == sorted(r.line for r in res_rows)
    assert any(r.rank == "VllmWorker rank=3" for r in res_rows) and any(r.rank == "VllmWorkerProcess pid=77" for r in res_rows)


@pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")
def test_fast_groups_are_the_stats_patterns_and_a_regex_re2_reads_differently_is_refused() -> None:
    import dataclasses
    import re

    from forensics.parsing.spec import PatternSet
    from forensics.parsing.vectorised import fast_groups

    ps = load_all()
    groups = fast_groups(ps, ps.by_keyword())
    assert {f.pattern.id for g in groups.values() for f in g} == {"vllm.stats_v1", "vllm.stats_v0", "sglang.fill_batch_2024"}
    # `[[:digit:]]` is a POSIX class to RE2 but a set of the characters `[:digt` to Python
    p = next(p for p in ps.patterns if p.id == "vllm.stats_v1")
    odd = dataclasses.replace(p, regex=re.compile(p.regex.pattern.replace(r"(?P<running>\d+)", "(?P<running>[[:digit:]]+)")))
    assert odd.regex.pattern != p.regex.pattern
    ps2 = PatternSet([odd if q is p else q for q in ps.patterns])
    assert "Avg prompt throughput:" not in fast_groups(ps2, ps2.by_keyword())


def test_group_form_reads_the_group_not_its_spelling() -> None:
    import dataclasses
    import re

    from forensics.parsing.vectorised import _safe_forms, group_form

    p = next(p for p in load_all().patterns if p.id == "vllm.stats_v1")
    safe = _safe_forms()
    assert safe["float"][group_form(p, "prompt_throughput")] is True      # \d[\d,]*(?:\.\d+)?: commas possible
    assert safe["int"][group_form(p, "running")] is False                 # \d+
    # an escaped `\(?P<x>` before the real group is text, not the group
    odd = dataclasses.replace(p, regex=re.compile(r"a \(?P<x>\d+\) (?P<x>[\d.]+) (?P<y>(?:\d+))"))
    assert group_form(odd, "x") == group_form(dataclasses.replace(p, regex=re.compile(r"(?P<x>[\d.]+)")), "x")
    assert group_form(odd, "x") not in safe["float"]
    assert group_form(odd, "y") in safe["int"] and group_form(odd, "w") is None


def test_two_vectorised_patterns_on_one_line_leave_the_other_lines_to_python() -> None:
    """A line both patterns take is one line: the candidate lines beside it still reach Python."""
    import dataclasses

    from forensics.parsing.spec import PatternSet

    ps = load_all()
    v1 = next(p for p in ps.patterns if p.id == "vllm.stats_v1")
    twin = dataclasses.replace(v1, id="vllm.stats_v1_twin")
    both = PatternSet([*ps.patterns, twin])
    lines = [_stats("(APIServer pid=1) ", n, 1.0) for n in range(5)]
    lines += [f"(APIServer pid=1) ERROR 10-10 05:00:0{n} [core.py:1] RuntimeError: CUDA error: an illegal memory access"
              for n in range(5)]
    data = ("\n".join(lines) + "\n").encode()

    def hits(fast: bool) -> list:
        return [(h.line, h.pattern.id, h.values) for h in Scanner(both).scan(io.BytesIO(data), fast=fast)]

    want = hits(False)
    assert {pid for _, pid, _ in want} >= {"vllm.stats_v1", "vllm.stats_v1_twin"} and len(want) > 10
    assert hits(True) == want


def test_clean_line_regex_is_the_python_definition() -> None:
    """`_CLEAN` (RE2) accepts exactly the lines the batch path may take, on random strings."""
    import random

    import pyarrow as pa
    import pyarrow.compute as pc

    from forensics.parsing.vectorised import _CLEAN

    def clean(s: str) -> bool:
        s = s[:-1] if s.endswith("\r") else s
        return (bool(s) and all(c == "\t" or " " <= c <= "~" for c in s) and "^[" not in s
                and s[-1] not in " \t")

    rng = random.Random(7)
    alphabet = ["a", " ", "\t", "^", "[", "]", "\\", "~", "\x7f", "é", "\x1b", "\r", "Z"]
    cases = sorted({"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 7))) for _ in range(60_000)})
    got = pc.match_substring_regex(pa.array([c.encode() for c in cases], pa.large_binary()), _CLEAN).to_pylist()
    assert [c for c, g in zip(cases, got) if g != clean(c)] == []


def test_overlap_strings() -> None:
    from forensics.parsing.vectorised import overlap_strings

    assert overlap_strings("new fill batch.", ["Exception", "new fill batch.", "Error"]) == ["Exceptionew fill batch."]
    assert overlap_strings("abcab", ["abcab", "bc", "cabx"]) is None          # "bc" is in every occurrence
    assert overlap_strings("abcab", ["abcab", "xabcaby", "bx"]) == ["abcabcab", "abcabx", "xabcaby"]


def test_vectorised_path_is_taken_for_vllm_stats(synthetic_log: bytes) -> None:
    sc = Scanner(load_all())
    batches = [b for b in sc.scan(io.BytesIO(synthetic_log), fast=True, batches=True)
               if isinstance(b, scanner_mod.RuntimeBatch)]
    assert sum(len(b) for b in batches) > 1000


def test_cli_process_uses_a_returning_pool_and_a_library_process_is_left_alone(synthetic_log: bytes, tmp_path) -> None:
    log = tmp_path / "big.log"
    log.write_bytes(synthetic_log)  # over SMALL: the batch path runs
    probe = ("import sys, pyarrow as pa\n"
             "from forensics.cli import cli\n"
             "from forensics.scan import scan_file\n"
             "if sys.argv[1] == 'cli':\n"
             "    try:\n"
             "        cli(['scan', '--format', 'json', sys.argv[2]], standalone_mode=False)\n"
             "    except SystemExit:\n"
             "        pass\n"
             "else:\n"
             "    scan_file(sys.argv[2])\n"
             "print(pa.default_memory_pool().backend_name, file=sys.stderr)\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}

    def backend(mode: str, **extra: str) -> str:
        out = subprocess.run([sys.executable, "-c", probe, mode, str(log)], capture_output=True, text=True,
                             env={**env, **extra}, check=True)
        return out.stderr.strip().splitlines()[-1]

    plain = subprocess.run([sys.executable, "-c", "import pyarrow as pa; print(pa.default_memory_pool().backend_name)"],
                           capture_output=True, text=True, env=env, check=True).stdout.strip()
    assert backend("cli") in ("jemalloc", "system")
    assert backend("library") == plain                     # pyarrow's own default, untouched
    assert backend("cli", ARROW_DEFAULT_MEMORY_POOL="system") == "system"   # the user's choice stands
