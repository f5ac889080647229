"""Reads a launch command (`cmd.sh`): docker wrappers, `vllm serve`, `python -m sglang.launch_server`.

Returns the engine and the requested arguments keyed as the engine spells them in snake
case (`--max-num-seqs 64` -> `max_num_seqs`), with the line each came from as evidence.
"""
from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from forensics.model import Evidence

_VLLM_ENTRY = re.compile(r"(?:^|/)vllm$|vllm\.entrypoints\.(?:openai\.)?api_server|vllm\.entrypoints\.cli\.main")
_SGLANG_ENTRY = re.compile(r"sglang\.launch_server|(?:^|/)sglang$")
# Short aliases vLLM accepts (`vllm serve -tp 2`).
_SHORT = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "dp": "data_parallel_size",
          "dcp": "decode_context_parallel_size", "q": "quantization", "O": "compilation_config"}
# SGLang accepts vLLM-style and abbreviated spellings of its own flags (argparse allows
# unambiguous prefixes); requested facts use SGLang's own names.
_SGLANG_ALIASES = {"tensor_parallel_size": "tp_size", "tp": "tp_size", "data_parallel_size": "dp_size",
                   "dp": "dp_size", "expert_parallel_size": "ep_size", "ep": "ep_size",
                   "pipeline_parallel_size": "pp_size", "pp": "pp_size",
                   "speculative_algo": "speculative_algorithm", "speculative_draft": "speculative_draft_model_path",
                   "model": "model_path"}
_NUMBER = re.compile(r"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")


@dataclass
class LaunchCommand:
    engine: str | None
    args: dict[str, Any] = field(default_factory=dict)
    evidence: dict[str, Evidence] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


def _coerce(text: str) -> Any:
    if text[:1] in "{[":
        try:
            return json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested deeper than json can read
            return text
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Join backslash continuations; keep the first physical line number of each piece."""
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    for i, line in enumerate(text.splitlines(), 1):
        s = line.rstrip()
        if not buf:
            start = i
        if s.endswith("\\"):
            buf.append(s[:-1])
            continue
        buf.append(s)
        out.append((start, " ".join(buf)))
        buf = []
    if buf:
        out.append((start, " ".join(buf)))
    return out


def parse_command(text: str, file: str = "cmd.sh") -> LaunchCommand:
    """Parse the engine launch in a shell script or command line; never raises."""
    physical = text.splitlines()
    for start, logical in _logical_lines(text):
        stripped = logical.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            tokens = shlex.split(stripped, comments=True)
        except ValueError:
            tokens = stripped.split()
        # split on shell operators so `export X=1 && vllm serve ...` works
        segments: list[list[str]] = [[]]
        for t in tokens:
            if t in ("&&", ";", "||", "|"):
                segments.append([])
            elif t.endswith(";") and len(t) > 1:
                segments[-1].append(t[:-1])
                segments.append([])
            else:
                segments[-1].append(t)
        for seg in segments:
            found = _engine_args(seg)
            if found is None:
                continue
            engine, args = found
            cmd = LaunchCommand(engine)
            for key, val in args:
                cmd.args[key] = val
                cmd.evidence[key] = Evidence(file, _line_of(physical, start, key), _raw_of(physical, start, key))
            return cmd
    return LaunchCommand(None)


def _flag_token(key: str) -> str:
    return "--" + key.replace("_", "-")


def _line_of(physical: list[str], start: int, key: str) -> int:
    flag = _flag_token(key)
    for i in range(start - 1, len(physical)):
        if flag in physical[i] or ("--" + key) in physical[i]:
            return i + 1
        if not physical[i].rstrip().endswith("\\") and i >= start - 1 and i > start - 1:
            break
    return start


def _raw_of(physical: list[str], start: int, key: str) -> str:
    return physical[_line_of(physical, start, key) - 1].strip()


def _engine_args(tokens: list[str]) -> tuple[str, list[tuple[str, Any]]] | None:
    """Find the engine entry point in one simple command and parse what follows it."""
    for i, t in enumerate(tokens):
        if _SGLANG_ENTRY.search(t):
            return "sglang", [(_SGLANG_ALIASES.get(k, k), v) for k, v in _flags(tokens[i + 1:], None)]
        if _VLLM_ENTRY.search(t):
            rest = tokens[i + 1:]
            if t.endswith("vllm") or t.endswith("cli.main"):
                if not rest or rest[0] != "serve":
                    continue
                rest = rest[1:]
            return "vllm", _flags(rest, "model")
    # docker run ... IMAGE [args]: the vLLM image's entrypoint is the API server
    if tokens[:2] == ["docker", "run"] or tokens[:1] == ["podman"]:
        for i, t in enumerate(tokens):
            if "/" in t and ("vllm" in t.lower() or "sglang" in t.lower()) and not t.startswith("-") and "=" not in t:
                prev = tokens[i - 1] if i else ""
                if prev.startswith("-") and not prev.startswith("--") and prev not in ("-d", "-it", "-i", "-t", "--rm"):
                    continue
                if prev in ("-v", "--volume", "-e", "--env", "--name", "--entrypoint", "--network", "--ipc", "--shm-size", "-p", "--gpus"):
                    continue
                rest = tokens[i + 1:]
                if rest and (_VLLM_ENTRY.search(rest[0]) or _SGLANG_ENTRY.search(rest[0]) or rest[0] in ("python", "python3")):
                    inner = _engine_args(rest)
                    if inner:
                        return inner
                engine = "sglang" if "sglang" in t.lower() else "vllm"
                return engine, _flags(rest, None)
    return None


def _flags(tokens: list[str], positional: str | None) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    i = 0
    while i < len(tokens):
        t = tokens[i]
        short = t[1:].partition("=")[0] if t.startswith("-") and not t.startswith("--") else None
        if short in _SHORT:
            t = "--" + _SHORT[short].replace("_", "-") + t[1 + len(short):]
        if t.startswith("--") and len(t) > 2:
            name, eq, val = t[2:].partition("=")
            key = name.replace("-", "_")
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            if eq:
                out.append((key, _coerce(val)))
            elif nxt is not None and (not nxt.startswith("-") or _NUMBER.match(nxt)):
                out.append((key, _coerce(tokens[i + 1])))
                i += 1
            else:
                out.append((key, True))
        elif positional and not t.startswith("-") and not any(k == positional for k, _ in out):
            out.append((positional, t))
        i += 1
    return out
