"""Every real log in fixtures/corpus is scanned and every labelled value is asserted."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from forensics.scan import apply_command, scan_file
from forensics.parsing.command import parse_command

from .conftest import CORPUS
from .corpus_labels import CORRECTIONS, IGNORED_PREFIXES, SGLANG, SGLANG_IGNORED, SPECIAL, VLLM

LOGS = sorted(CORPUS.glob("*/*.log"))


def _flatten(prefix: str, obj: Any, out: dict[str, Any]) -> None:
    if isinstance(obj, dict) and obj and prefix not in ("first_fatal_error",):
        for k, v in obj.items():
            _flatten(f"{prefix}.{k}" if prefix else k, v, out)
    else:
        out[prefix] = obj


def _same(want: Any, got: Any, key: str) -> bool:
    if isinstance(want, bool) or isinstance(got, bool):
        return want == got
    if isinstance(want, (int, float)) and isinstance(got, (int, float)):
        return math.isclose(want, got, rel_tol=1e-4, abs_tol=0.006)
    if key == "model" and isinstance(want, str) and isinstance(got, str):
        return got == want or got.rstrip("/").endswith(want.rstrip("/")) or want.endswith(got)
    if isinstance(want, str) and not isinstance(got, str):
        return want == str(got)
    return want == got


def _ignored(key: str, engine: str) -> bool:
    if engine == "sglang" and key in SGLANG_IGNORED:
        return True
    return any(key == p or key.startswith(p + ".") for p in IGNORED_PREFIXES)


def _scan(log: Path, label: dict[str, Any]):
    res = scan_file(log)
    cmd = label.get("launch_command")
    if cmd:
        apply_command(res, parse_command(cmd, "launch_command"))
    return res


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_labelled_values(log: Path) -> None:
    label = json.loads(log.with_suffix(".json").read_text())
    engine = label["engine"]
    table = VLLM if engine == "vllm" else SGLANG
    res = _scan(log, label)
    flat: dict[str, Any] = {}
    _flatten("", label["expected"], flat)
    for top in ("vllm_version", "sglang_version", "launch_command"):
        if top in label:
            flat[top] = label[top]
    problems = []
    corrected = CORRECTIONS.get(f"{engine}/{log.stem}", {})
    for key, want in sorted(flat.items()):
        if key in SPECIAL or key in corrected or _ignored(key, engine):
            continue
        assert key in table, f"label key {key!r} is neither mapped nor ignored in corpus_labels.py"
        section, name, *scale = table[key]
        facts = res.meta if section == "meta" else getattr(res, section)
        fact = facts.get(name)
        if want is None or want == [] or (want == "None" and section == "requested"):
            if fact is not None and not (want == "None" and fact.value in (None, "None")):
                problems.append(f"{key}: label says not shown, scan reported {fact.value!r} (line {fact.evidence.line})")
            continue
        if scale:
            want = want * scale[0]
        if fact is None:
            problems.append(f"{key}: missing, label {want!r}")
        elif not _same(want, fact.value, name):
            problems.append(f"{key}: scan {fact.value!r} (line {fact.evidence.line}), label {want!r}")
    exp = label["expected"]
    if res.outcome != exp["outcome"] and "outcome" not in corrected:
        problems.append(f"outcome: scan {res.outcome!r}, label {exp['outcome']!r}")
    problems += _check_error(res, exp.get("first_fatal_error"))
    want_fp8 = exp.get("fp8_scale_warnings")
    got_fp8 = res.effective.get("fp8_scale_warnings")
    if want_fp8:
        if got_fp8 is None or len(got_fp8.value) != len(want_fp8):
            problems.append(f"fp8_scale_warnings: scan {got_fp8.value if got_fp8 else None}, label {want_fp8}")
    elif want_fp8 == [] and got_fp8 is not None:
        problems.append(f"fp8_scale_warnings: label has none, scan {got_fp8.value}")
    assert not problems, f"{log.name}:\n  " + "\n  ".join(problems)


def _check_error(res, want: dict[str, Any] | None) -> list[str]:
    if not want:
        return []
    if not res.errors:
        return [f"first_fatal_error: scan has no errors, label {want}"]
    root = res.errors[0]
    out = []
    wt, wm, wr = want.get("type"), want.get("message"), want.get("rank")
    if wt and not (root.type == wt or wt in root.evidence.raw):
        out.append(f"first_fatal_error.type: scan {root.type!r} (line {root.evidence.line}), label {wt!r}")
    if wm and not (root.message == wm or wm in root.evidence.raw or (root.message or "").startswith(wm[:60])):
        out.append(f"first_fatal_error.message: scan {root.message!r}, label {wm!r}")
    if wr and root.rank != wr:
        out.append(f"first_fatal_error.rank: scan {root.rank!r}, label {wr!r}")
    return out


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_engine_detected(log: Path) -> None:
    label = json.loads(log.with_suffix(".json").read_text())
    assert scan_file(log).engine == label["engine"]


@pytest.mark.parametrize("log", LOGS, ids=[p.stem for p in LOGS])
def test_every_fact_cites_its_line(log: Path) -> None:
    lines = log.read_bytes().decode("utf-8", "replace").split("\n")
    res = scan_file(log)
    for section in (res.meta, res.requested, res.effective, res.runtime):
        for name, fact in section.items():
            ev = fact.evidence
            if ev.file != str(log):
                continue
            assert 1 <= ev.line <= len(lines), name
            physical = lines[ev.line - 1]
            assert ev.raw.rstrip("\r")[:200] in physical or ev.raw[:50] in physical, (name, ev.line, ev.raw[:80])
