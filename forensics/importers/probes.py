"""Quality probes: JSONL records with a boolean `ok`, and `GATE <name> score= X [pass|fail]` lines.

A JSON record keeps `name` and `score` as columns and every other key in `extra`. A GATE line's
`ok` is True/False only when a pass/fail word follows the score, else None. Other text lines
(a probe script's chatter) are ignored; a line that opens `{` but is not JSON is a problem.

A JSON probe that says it expects JSON (`expect`, `format` or `response_format` naming json)
and carries the model's text (`response`, `output`, `text` or `completion`) gets `json_status`:
the whole text parsed strictly with `json.loads` (`ok`), or why not: `fenced` (wrapped in a
Markdown code fence), `unfinished` (valid up to the end but cut), `invalid`. Fences are never
stripped to make a response pass.
"""
from __future__ import annotations

import json
import re

from .base import ImportResult, extra_json, make_row, to_float
from .jsonstream import decode_text

TOOL = "probes"
NAME_HINTS = re.compile(r"probe|gate|quality|eval", re.I)
_GATE = re.compile(r"\bGATE\s+(?P<name>\S+)\s+score\s*=\s*(?P<score>\S+)(?P<rest>.*)$")
_PASS = re.compile(r"\b(pass(ed)?|ok|true)\b", re.I)
_FAIL = re.compile(r"\b(fail(ed)?|false|not ok)\b", re.I)
_OK_KEY = re.compile(rb'"ok"\s*:\s*(true|false)')


def sniff(head: bytes, name: str) -> bool:
    """A GATE line, or a JSON line holding a boolean `ok`."""
    if re.search(rb"\bGATE\s+\S+\s+score\s*=", head):
        return True
    first = head.lstrip()[:1]
    return first == b"{" and _OK_KEY.search(head.split(b"\n", 1)[0]) is not None


_EXPECTS = ("expect", "format", "response_format", "expected_format")
_TEXTS = ("response", "output", "text", "completion")


def json_status(text: str) -> str:
    """Strict whole-response JSON check: ok | fenced | unfinished | invalid."""
    try:
        json.loads(text)
        return "ok"
    except (json.JSONDecodeError, RecursionError):
        pass
    stripped = text.strip()
    if stripped.startswith("```"):
        return "fenced"
    try:
        json.loads(stripped + "\u0000")
    except json.JSONDecodeError as exc:
        # the parser ran off the end of the text: the value was cut, not malformed
        if exc.pos >= len(stripped) and stripped[:1] in "{[\"":
            return "unfinished"
    except RecursionError:
        pass
    return "invalid"


def _expects_json(obj: dict) -> bool:
    for k in _EXPECTS:
        v = obj.get(k)
        if isinstance(v, dict):
            v = v.get("type")
        if isinstance(v, str) and "json" in v.lower():
            return True
    return False


def _json_line(res: ImportResult, lineno: int, index: int, text: str) -> None:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        res.add_problem(lineno, f"invalid JSON ({exc.msg})", index, text)
        return
    if not isinstance(obj, dict) or not isinstance(obj.get("ok"), bool):
        res.add_problem(lineno, "JSON record without a boolean `ok`", index, text)
        return
    score = to_float(obj.get("score"))
    mapped = ("ok", "name", "score") if score is not None or obj.get("score") is None else ("ok", "name")
    rest = {k: v for k, v in obj.items() if k not in mapped}
    name = obj.get("name")
    body = next((obj[k] for k in _TEXTS if isinstance(obj.get(k), str)), None)
    status = json_status(body) if body is not None and _expects_json(obj) else None
    res.probes.append(make_row(
        "probes", source_file=res.source, line=lineno, record_index=index, kind="json",
        name=name if isinstance(name, str) else (None if name is None else str(name)),
        score=score, ok=obj["ok"], raw=text[:500], extra=extra_json(rest), json_status=status,
    ))


def _gate_line(res: ImportResult, lineno: int, index: int, text: str, m: re.Match) -> None:
    score = to_float(m.group("score"))
    if score is None:
        res.add_problem(lineno, f"GATE line with unreadable score {m.group('score')!r}", index, text)
    rest = m.group("rest")
    ok = False if _FAIL.search(rest) else True if _PASS.search(rest) else None
    res.probes.append(make_row(
        "probes", source_file=res.source, line=lineno, record_index=index, kind="gate",
        name=m.group("name"), score=score, ok=ok, raw=text[:500],
        extra=extra_json({"rest": rest.strip()} if rest.strip() else None),
    ))


def read(data: bytes, source: str) -> ImportResult:
    res = ImportResult(TOOL, source)
    text, problems = decode_text(data, source)
    res.problems.extend(problems)
    index = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        m = _GATE.search(s)
        if m:
            res.guard(lineno, index, lambda: _gate_line(res, lineno, index, s, m))
        elif s.startswith("{"):
            res.guard(lineno, index, lambda: _json_line(res, lineno, index, s))
        else:
            continue
        index += 1
    return res
