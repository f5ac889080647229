"""Property tests: arbitrary bytes and text never raise out of a parser.

Each parser family gets random input (and input built from real log fragments, so the
patterns actually fire); importers must turn a malformed record into a problem that names
its file and line while every other record is still read. Example counts are kept small so
this file runs in well under a minute; `fuzz/run.py` runs the same families for longer.
"""
from __future__ import annotations

import io
import json
import math

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from forensics import importers
from forensics.importers import PROBLEM_KEYS, TABLE_COLUMNS
from forensics.importers.jsonstream import read_values
from forensics.parsing import command, envelope, pyrepr
from forensics.parsing.spec import load_all
from forensics.scan import scan_stream

from .conftest import CORPUS, FIXTURES

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

PATTERNS = load_all()
# Real lines from the corpus: a random mix of them (cut, doubled, joined with junk) reaches
# the patterns' extraction code, which pure random bytes almost never do.
REAL_LINES = sorted({ln for p in sorted(CORPUS.glob("*/*.log")) for ln in p.read_bytes().splitlines() if ln.strip()})
DEEP = "[" * 5000  # deeper than Python's recursion limit


def _lines_from_corpus() -> st.SearchStrategy[bytes]:
    piece = st.one_of(
        st.sampled_from(REAL_LINES),
        st.sampled_from(REAL_LINES).flatmap(lambda ln: st.integers(0, len(ln)).map(lambda i: ln[:i])),
        st.binary(max_size=40),
    )
    sep = st.sampled_from([b"\n", b"\r\n", b"\r", b"", b"\x00", b"\n\n"])
    return st.lists(st.tuples(piece, sep), max_size=40).map(lambda xs: b"".join(a + b for a, b in xs))


# ---------------------------------------------------------------- envelope

@FAST
@given(st.text())
@example("\x1b[" * 1000)
@example("> " * 100 + "(EngineCore_DP0 pid=1) [2025-01-01 00:00:00 DP0 TP0] INFO 01-01 00:00:00 [x.py:1] hi")
def test_envelope_split_never_raises(text: str) -> None:
    sp = envelope.split(text)
    assert isinstance(sp.message, str)
    assert sp.rank is None or isinstance(sp.rank, str)
    assert sp.message == sp.message.strip()


@FAST
@given(st.sampled_from(REAL_LINES), st.text(max_size=30))
def test_envelope_split_of_a_real_line_with_junk_appended(line: bytes, junk: str) -> None:
    envelope.split(line.decode("utf-8", "replace") + junk)


# ---------------------------------------------------------------- scanner

@SLOW
@given(st.binary(max_size=8192), st.booleans())
@example(b"\n" * 10000, False)
@example(b"\xff\xfe\x00" * 1000, True)
def test_scanner_never_raises_on_bytes(data: bytes, fast: bool) -> None:
    res = scan_stream(io.BytesIO(data), "fuzz.log", PATTERNS, fast=fast)
    assert res.outcome in ("ready", "failed_startup", "crashed_after_ready", "unknown")


@SLOW
@given(_lines_from_corpus(), st.booleans())
def test_scanner_on_shuffled_real_lines(data: bytes, fast: bool) -> None:
    rows = []
    res = scan_stream(io.BytesIO(data), "mix.log", PATTERNS, on_runtime=rows.append, fast=fast)
    n_lines = data.count(b"\n") + 1
    for fact in (*res.effective.values(), *res.requested.values(), *res.meta.values()):
        assert 1 <= fact.evidence.line <= n_lines
        json.dumps(fact.value, default=str)
    for e in res.errors:
        assert 1 <= e.evidence.line <= n_lines
    for r in rows:
        assert 1 <= r.line <= n_lines


@SLOW
@given(_lines_from_corpus())
def test_scanner_paths_agree(data: bytes) -> None:
    """The Python and the RE2 path read the same facts from the same bytes."""
    a = scan_stream(io.BytesIO(data), "x.log", PATTERNS, fast=False)
    b = scan_stream(io.BytesIO(data), "x.log", PATTERNS, fast=True)
    assert {k: (f.value, f.evidence.line) for k, f in a.effective.items()} == \
        {k: (f.value, f.evidence.line) for k, f in b.effective.items()}
    assert [(e.type, e.evidence.line) for e in a.errors] == [(e.type, e.evidence.line) for e in b.errors]


# ---------------------------------------------------------------- compressed streams

@SLOW
@given(st.binary(max_size=200_000), st.sampled_from(["gzip", "zstd"]), st.floats(0, 1), st.booleans())
def test_cut_or_corrupt_compressed_log_yields_a_prefix_never_an_exception(data: bytes, kind: str, cut: float,
                                                                          flip: bool) -> None:
    import gzip

    import zstandard

    from forensics.errors import InputError
    from forensics.parsing.reader import _decompress

    packed = gzip.compress(data, mtime=0) if kind == "gzip" else zstandard.ZstdCompressor().compress(data)
    end = max(4, int(len(packed) * cut))
    damaged = bytearray(packed[:end])
    if flip and len(damaged) > 20:
        damaged[len(damaged) // 2] ^= 0xFF
    stream = _decompress(io.BytesIO(bytes(damaged)), "x", strict=False)
    out = stream.read()
    if not flip:
        assert data.startswith(out)  # a cut never invents bytes
        assert (stream.raw.truncated is None) == (end == len(packed) and out == data)
    strict = _decompress(io.BytesIO(bytes(damaged)), "x", strict=True)
    if not flip and end < len(packed):
        with pytest.raises(InputError):  # scan: a cut is a one-line error
            strict.read()
    else:
        try:
            strict.read()
        except InputError:  # corruption noticed (CRC, bad block): the same one-line error
            pass


# ---------------------------------------------------------------- pyrepr

_REPR_ALPHABET = st.sampled_from(list("()[]{}'\"\\,=:. _abcxyz0123456789-eE+") + ["None", "True", "inf", "nan"])
_reprish = st.lists(_REPR_ALPHABET, max_size=200).map("".join)


@FAST
@given(st.one_of(st.text(), _reprish), st.sampled_from(["ServerArgs", "EngineArgs", "x", ""]))
@example("ServerArgs(a=" + DEEP, "ServerArgs")
@example("ServerArgs(a=" + "(" * 5000 + ")" * 5000 + ", b=1)", "ServerArgs")
@example("ServerArgs(a=" + "9" * 5000 + ")", "ServerArgs")
@example("ServerArgs(a='\\", "ServerArgs")
def test_pyrepr_call_never_raises(text: str, name: str) -> None:
    out = pyrepr.call(text, name)
    assert out is None or all(isinstance(k, str) and k.isidentifier() for k in out)


@FAST
@given(st.one_of(st.text(), _reprish.map(lambda s: "{" + s)))
@example("{'a': " + DEEP)
@example("{'a': 1, 'b': [1, 2")
@example("{" * 5000)
def test_pyrepr_mapping_and_kwargs_never_raise(text: str) -> None:
    out = pyrepr.mapping(text)
    assert out is None or all(isinstance(k, str) for k in out)
    assert isinstance(pyrepr.kwargs(text), dict)


def test_pyrepr_cut_repr_keeps_complete_items() -> None:
    assert pyrepr.call("ServerArgs(a=1, b='x', c=[1, 2", "ServerArgs") == {"a": 1, "b": "x"}
    assert pyrepr.mapping("{'a': 1, 'b': {'c': 2}, 'd': [") == {"a": 1, "b": {"c": 2}}


# ---------------------------------------------------------------- command

_words = st.sampled_from(["vllm", "serve", "python", "-m", "sglang.launch_server", "--tp", "2", "-tp", "\\\n",
                          "--max-num-seqs", "64", "&&", ";", "|", "docker", "run", "vllm/vllm-openai:latest",
                          "'", '"', "#", "--model", "m", "--x=", "{", "[", "}", "]", "=", "\n", "--", "-"])


@FAST
@given(st.one_of(st.text(), st.lists(_words, max_size=40).map(" ".join)))
@example("vllm serve m --x " + DEEP)
@example("vllm serve m --compilation-config " + "{" * 3000)
@example("vllm serve m --max-num-seqs " + "9" * 5000)
@example("vllm serve m \\")
@example("python -m sglang.launch_server --model 'unterminated")
def test_parse_command_never_raises(text: str) -> None:
    cmd = command.parse_command(text, "cmd.sh")
    n = max(1, len(text.splitlines()))
    assert set(cmd.args) == set(cmd.evidence)
    for ev in cmd.evidence.values():
        assert ev.file == "cmd.sh" and 1 <= ev.line <= n


def test_deeply_nested_json_flag_is_kept_as_text() -> None:
    """Regression (found by probing the fuzz families): json.loads raised RecursionError."""
    cmd = command.parse_command("vllm serve m --hf-overrides " + DEEP)
    assert cmd.engine == "vllm" and cmd.args["hf_overrides"] == DEEP


# ---------------------------------------------------------------- importers

def _check(res, source: str) -> None:
    for p in res.problems:
        assert tuple(p) == PROBLEM_KEYS
        assert p["file"] == source and isinstance(p["message"], str) and p["message"]
        assert p["line"] is None or p["line"] >= 1
    for table, cols in TABLE_COLUMNS.items():
        for row in getattr(res, table):
            assert set(row) <= set(cols) | {"line"}, (table, sorted(set(row) - set(cols)))


_json_junk = st.recursive(
    st.one_of(st.none(), st.booleans(), st.floats(allow_nan=True, allow_infinity=True), st.integers(),
              st.text(max_size=10)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=20,
)
_keyish = st.sampled_from(["date", "completed", "model_id", "mean_ttft_ms", "request_rate", "ttfts", "itls",
                           "input_lens", "errors", "benchmarks", "generative_benchmark", "ttft_s", "ok", "score",
                           "records", "metrics", "request_start_ns", "total_output_tokens_retokenized"])
_bench_like = st.dictionaries(_keyish, _json_junk, max_size=8).map(lambda d: json.dumps(d, allow_nan=True).encode())


@SLOW
@given(st.one_of(st.binary(max_size=4096), _bench_like, st.lists(_bench_like, max_size=5).map(b"\n".join)),
       st.sampled_from(["r.json", "bench.jsonl", "gpu.csv", "m.prom", "x"]))
@example(DEEP.encode(), "r.json")
@example(b'{"a":' * 5000, "r.json")
@example(b'DCGM_FI_DEV_GPU_TEMP{gpu="0"} 42 ' + b"9" * 5000, "m.prom")
@example(b'{"ok": true, "x": ' + DEEP.encode() + b"}", "probes.jsonl")
@example(b"\xef\xbb\xbf" + b"\x00" * 100, "r.json")
def test_every_importer_sniffs_and_reads_anything(data: bytes, name: str) -> None:
    importers.detect(data[: importers.HEAD_BYTES], name)
    for imp in importers.IMPORTERS:
        assert imp.sniff(data[: importers.HEAD_BYTES], name) in (True, False)
        _check(imp.read(data, name), name)


def test_json_nested_too_deep_is_a_problem_and_the_rest_still_reads() -> None:
    """Regression: the JSON stream reader raised RecursionError on deep nesting."""
    good = json.dumps({"a": 1})
    data = (good + "\n" + DEEP + "\n" + good + "\n").encode()
    records, problems = read_values(data, "deep.json")
    assert [r.value for r in records] == [{"a": 1}, {"a": 1}]
    assert problems == [{"file": "deep.json", "line": 2, "record_index": 1,
                         "message": "record 1: JSON nested too deep to read", "raw": DEEP[:200]}]


def test_dcgm_timestamp_with_thousands_of_digits_is_dropped_not_raised() -> None:
    """Regression: int() of a 5000-digit timestamp raised ValueError out of dcgm.read."""
    from forensics.importers import dcgm

    res = dcgm.read(b'DCGM_FI_DEV_GPU_TEMP{gpu="0"} 42 ' + b"9" * 5000 + b"\n", "m.prom")
    assert res.problems == [] and len(res.gpu_samples) == 1
    assert res.gpu_samples[0]["ts_utc"] is None and res.gpu_samples[0]["temperature_c"] == 42


# A valid vLLM bench file: N objects, one per line, as `vllm bench serve --append-result` writes.
VLLM_OBJ = json.loads((FIXTURES / "results" / "vllm_benchmark_serving_results_multi_run_concatenated.json")
                      .read_text().splitlines()[0])


def _vllm_objects(n: int, rate: float) -> list[str]:
    return [json.dumps({**VLLM_OBJ, "request_rate": rate * (i + 1), "completed": 100 + i}) for i in range(n)]


_corruptions = st.sampled_from(["truncate", "junk_inside", "binary", "drop_brace", "nan_key", "not_object"])


@SLOW
@given(st.integers(2, 6), st.data(), _corruptions)
def test_one_corrupt_vllm_record_is_a_problem_and_the_rest_read(n: int, data, how: str) -> None:
    objs = _vllm_objects(n, 1.0)
    bad = data.draw(st.integers(0, n - 1), label="bad")
    text = objs[bad]
    if how == "truncate":
        text = text[: data.draw(st.integers(1, len(text) - 2), label="cut")]
    elif how == "junk_inside":
        at = data.draw(st.integers(1, len(text) - 2), label="at")
        text = text[:at] + data.draw(st.sampled_from(['"', "}{", ",,", ":", "@@"]), label="junk") + text[at:]
    elif how == "binary":
        text = text[:20] + "\x00\x01\x02" + text[20:]
    elif how == "drop_brace":
        text = text[:-1]
    elif how == "nan_key":
        text = text.replace(f'"completed": {100 + bad}', '"completed": NaN', 1)
    elif how == "not_object":
        text = "[1, 2, 3]"
    objs[bad] = text
    source = "run/bench.json"
    res = importers.vllm_bench.read(("\n".join(objs) + "\n").encode(), source)
    _check(res, source)
    good_lines = [i + 1 for i in range(n) if i != bad]
    read_lines = [r["line"] for r in res.bench_points]
    # every intact record is read, with its own line
    assert set(good_lines) <= set(read_lines)
    if how == "nan_key":
        assert res.problems == [] and res.bench_points[bad]["completed"] is None
        return
    if set(read_lines) == set(good_lines):  # the bad one was dropped: it must be reported at its line
        assert any(p["line"] == bad + 1 and p["file"] == source for p in res.problems), res.problems
    else:  # junk that still parses (inside a string, or `}{` splitting it in two) is read as records
        assert bad + 1 in read_lines and len(read_lines) >= n


@SLOW
@given(st.integers(2, 8), st.data())
def test_one_corrupt_sglang_jsonl_line_is_a_problem(n: int, data) -> None:
    path = FIXTURES / "results" / "sglang_bench_serving_llama_3_3_70b_online_output.jsonl"
    first = path.read_text().splitlines()[0]
    lines = [first] * n
    bad = data.draw(st.integers(0, n - 1))
    lines[bad] = first[: data.draw(st.integers(1, len(first) - 2))]
    res = importers.sglang_bench.read(("\n".join(lines) + "\n").encode(), "s.jsonl")
    _check(res, "s.jsonl")
    assert [r["line"] for r in res.bench_points] == [i + 1 for i in range(n) if i != bad]
    assert [p["line"] for p in res.problems] == [bad + 1]


@SLOW
@given(st.integers(2, 8), st.data())
def test_one_corrupt_nvidia_smi_row_is_a_problem(n: int, data) -> None:
    path = FIXTURES / "results" / "nvidia-smi_query-gpu_csv_with_units_bpytop_issue26.csv"
    header, row = path.read_text().splitlines()[:2]
    rows = [row] * n
    bad = data.draw(st.integers(0, n - 1))
    rows[bad] = data.draw(st.sampled_from(["\x00\x01junk", "a, b", row + ", extra, cells", "9" * 5000 + ", x"]))
    res = importers.nvidia_smi.read(("\n".join([header, *rows]) + "\n").encode(), "gpu.csv")
    _check(res, "gpu.csv")
    assert len(res.gpu_samples) >= n - 1
    lines = [r["line"] for r in res.gpu_samples]
    assert all(i + 2 in lines for i in range(n) if i != bad)
    if bad + 2 not in lines:
        assert any(p["line"] == bad + 2 for p in res.problems), res.problems


@FAST
@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers(-(10**30), 10**30))
def test_absurd_numbers_become_finite_or_none(v) -> None:
    obj = {**VLLM_OBJ, "mean_ttft_ms": v, "completed": v, "request_rate": v}
    res = importers.vllm_bench.read(json.dumps(obj, allow_nan=True).encode(), "b.json")
    assert res.problems == []
    row = res.bench_points[0]
    for col in ("mean_ttft_ms", "completed", "request_rate"):
        assert row[col] is None or math.isfinite(row[col])


if __name__ == "__main__":  # pragma: no cover
    pytest.main([__file__, "-q"])


# ---------------------------------------------------------------- the batch path for stats lines

_STATS_IDS = ("vllm.stats_v1", "vllm.stats_v0", "sglang.fill_batch_2024")
_STATS_LINES = [s["line"] for p in PATTERNS.patterns if p.id in _STATS_IDS for s in p.samples]
_EDITS = ["1", "12,3", "0.5", ".", ",", " ", "\t", "é", "^[", "\x1b[0m", "Avg prompt throughput: ", "Error",
          "Exception", "Exceptio", "new fill batch. ", "(APIServer pid=1) ", "(VllmWorker rank=2 pid=3) ", "INFO ",
          "WARNING ", "10-10 05:00:00 ", "[x.py:1] ", "99999999999999999999", "1" * 70, "e5", "nan", "%", " reqs",
          "Engine 000: ", "\r", "_"]


@st.composite
def _mutated_stats_log(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(1, 25))):
        line = draw(st.sampled_from(_STATS_LINES))
        for _ in range(draw(st.integers(0, 3))):
            pos = draw(st.integers(0, len(line)))
            if draw(st.booleans()):
                line = line[:pos] + draw(st.sampled_from(_EDITS)) + line[pos:]
            else:
                line = line[:pos] + line[pos + draw(st.integers(1, 12)):]
        lines.append(line)
    return ("\n".join(lines) + "\n").encode()


@SLOW
@given(_mutated_stats_log())
def test_batch_path_reads_mutated_stats_lines_as_python_does(data: bytes) -> None:
    """Every fact, peak (with its evidence), error and runtime row, in order, on both paths."""
    got = []
    for fast in (False, True):
        rows: list = []
        res = scan_stream(io.BytesIO(data), "x.log", PATTERNS, on_runtime=rows.append, fast=fast)
        got.append((repr(res), rows))
    assert got[0] == got[1]


def test_odd_literals_do_not_warn_on_stderr(recwarn) -> None:
    """Text like `1and 2` makes Python's compiler print a SyntaxWarning; a scan must stay quiet."""
    assert pyrepr.value("1and 2") == "1and 2" and pyrepr.value("0x1for") == "0x1for"
    assert pyrepr.mapping("{'a': 1if 2 else 3}") == {"a": "1if 2 else 3"}
    assert not [w for w in recwarn if issubclass(w.category, SyntaxWarning)]
