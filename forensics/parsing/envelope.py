"""Strips the wrappers real pastes put around a log record and reads the rank label.

A line as pasted may carry, outside in: a markdown quote, a docker-compose, journald,
containerd or Buildkite prefix, ANSI colour (raw or in caret notation), a process prefix
such as ``(EngineCore_DP0 pid=301)``, an SGLang ``[date time DP0 TP1]`` prefix and a
vLLM ``INFO 10-10 11:10:32 [file.py:12]`` header. ``split`` peels all of that and returns
the message with the rank and level it carried.
"""
from __future__ import annotations

import re
from typing import NamedTuple

_ANSI = re.compile(r"(?:\x1b|\^\[)\[[0-9;?]*[A-Za-z]")

# Outer wrappers, tried repeatedly at the start of the line.
_OUTER = re.compile(
    r"""^(?:
        >\ ?                                                     # markdown quote
      | \[\d{4}-\d\d-\d\dT[\d:.]+Z?\]\ *(?:\|\ +)?               # Buildkite [2025-03-10T15:07:20Z]
      | \d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:?\d\d)?\ (?:std(?:out|err)\ [FP]\ )?  # docker -t / CRI
      | \d{4}-\d\d-\d\d\ \d\d:\d\d:\d\d(?:[.,]\d+)?\ \|\ (?:[A-Z]+\ +\|\ \w+\ \|\ )?  # docker logs / wrapper logger
      | \d{4}-\d\d-\d\d\ \d\d:\d\d:\d\d(?:[.,]\d+)?\ (?=\[)      # Docker Desktop local time before [
      | \S+\ \d\d?\ \d\d:\d\d:\d\d\ \S+\ [\w.@/-]+\[\d+\]:\ ?     # journald: Mon 18 14:15:04 host proc[pid]:
      | [\w.-]+\s+\|\ ?(?=\S|\s*$)                                # docker compose: svc-1  |
      | │\ ?                                                      # k9s border
      | \|\ +                                                     # Buildkite gutter
    )""",
    re.X,
)

# Process prefixes: (EngineCore_DP0 pid=301), (VllmWorker rank=1 pid=7), (SGLangEngine pid=9)
_PROC = re.compile(r"^\((?P<name>[A-Za-z][\w]*)(?: rank=(?P<r>\d+))? pid=(?P<pid>\d+)\)\s*")
# A stage tag some wrappers put before the vLLM header (vllm-omni: `[Stage-0] INFO 02-02 ...`).
_STAGE = re.compile(r"^\[[A-Za-z][\w]*-\d+\]\s+(?=(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s)")
# SGLang: [2025-05-26 07:48:17 DP1 TP2] / [23:17:08 TP4] / [gpu_id=0]
_SGL = re.compile(
    r"^\[(?:(?P<ts>(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d(?:[.,]\d+)?)(?P<ranks>(?: (?:DP|TP|PP|EP|CP|ATTN_CP|ATTN_DP|MOE_DP)\d+)*)|gpu_id=(?P<gpu>\d+))\]\s*"
)
# vLLM header: INFO 10-10 11:10:32 [file.py:12] / INFO 08-07 07:11:24 llm_engine.py:178] / INFO [x.py:1]
_VLLM = re.compile(
    r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+"
    r"(?:(?P<ts>\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\s+)?"
    r"(?:\[[^\]\s]+:\d+\]|[\w./-]+\.py:\d+\])\s?"
)
# SGLang custom logging config: 2026-01-01 10:00:00 ERROR 123 [ TP6 PP0 scheduler.py:2547]
_CUSTOM = re.compile(r"^(?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d\S* (?P<level>[A-Z]+) \d+ \[(?P<ranks>[ A-Z0-9]*?)\s*[\w.]+\.py:\d+\]\s*")


class Split(NamedTuple):
    message: str
    rank: str | None
    level: str | None
    time: str | None


def clean(text: str) -> str:
    """Remove ANSI escapes (raw or caret notation) and trailing line ends."""
    if "\x1b" in text or "^[" in text:
        text = _ANSI.sub("", text)
    return text.rstrip("\r\n")


def split(text: str) -> Split:
    """Peel envelopes off one physical line (without its newline)."""
    text = clean(text)
    for _ in range(4):
        m = _OUTER.match(text)
        if not m or m.end() == 0:
            break
        text = text[m.end():]
    rank = level = ts = None
    m = _PROC.match(text)
    if m:
        name, r = m.group("name"), m.group("r")
        if r is not None:
            rank = f"{name} rank={r}"
        elif name in ("VllmWorkerProcess",):
            rank = f"{name} pid={m.group('pid')}"
        else:
            rank = name
        text = text[m.end():]
        # Ray/compose may stack another process prefix (SGLangEngine then [date TP0])
    m = _STAGE.match(text)
    if m:
        text = text[m.end():]
    m = _SGL.match(text)
    if m:
        if m.group("gpu") is not None:
            rank = rank or f"gpu_id={m.group('gpu')}"
        else:
            ranks = (m.group("ranks") or "").strip()
            rank = ranks or rank
            ts = m.group("ts")
        text = text[m.end():]
    else:
        m = _CUSTOM.match(text)
        if m:
            level = m.group("level")
            rank = (m.group("ranks") or "").strip() or rank
            text = text[m.end():]
    m = _VLLM.match(text)
    if m:
        level = m.group("level")
        ts = m.group("ts") or ts
        text = text[m.end():]
    return Split(text.strip(), rank, level, ts)
