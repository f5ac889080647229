"""How many sequences fit at each prompt+output length: `forensics capacity`.

For a run in the archive, at each length (prompt + output tokens per sequence):

    fits = min(sequence cap, floor(KV tokens per engine / (prompt + output))) x engines

- sequence cap: the effective `max_running_requests`, else the requested `max_num_seqs` (vLLM) or
  `max_running_requests` (SGLang); both engines apply it per engine (vLLM per engine, SGLang per
  DP worker), so it is multiplied by engines like the KV side;
- engines: the effective `data_parallel_size`, else the requested `data_parallel_size` / `dp_size`,
  else 1;
- KV tokens per engine: the effective `kv_cache_tokens` (SGLang prints it per DP worker, vLLM's
  `GPU KV cache size` is per engine);
- a length longer than the context (effective `context_len`, else the requested `max_model_len` /
  `context_length`) does not fit at all and shows as "-".

`binding` says which limit decides: `seq cap` (the cap is at or below what the KV pool holds) or
`kv`; `seq cap (kv unknown)` / `kv (seq cap unknown)` when the logs show only one of them, and
`context` for a length beyond the context. A limit the logs do not show is left out, never guessed.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from forensics.archive import Connection
from forensics.errors import ForensicsError

SCHEMA = "forensics.capacity/1"
DEFAULT_LENGTHS = ("1K+1K", "8K+1K", "32K", "128K", "256K", "512K", "1M")
_UNITS = {"": 1, "K": 1024, "M": 1024 * 1024}
_LEN_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KkMm]?)\s*$")


@dataclass(frozen=True)
class Length:
    """One sequence shape: prompt and output tokens; `source` is `default`, `option` or `bench`."""

    label: str
    prompt: int
    output: int
    source: str = "option"

    @property
    def tokens(self) -> int:
        return self.prompt + self.output


def _tokens(text: str) -> int:
    m = _LEN_RE.match(text)
    if not m:
        raise ValueError(text)
    n = float(m.group(1)) * _UNITS[m.group(2).upper()]
    if n != int(n) or n < 0:
        raise ValueError(text)
    return int(n)


def parse_length(text: str, source: str = "option") -> Length:
    """`1K+1K`, `8K+1K`, `32K` (prompt only), `1M`, `3000+500`; K = 1024, M = 1024 x 1024.

    Raises:
        ForensicsError: not PROMPT[+OUTPUT] with an optional K/M suffix.
    """
    prompt, sep, output = text.strip().partition("+")
    try:
        p = _tokens(prompt)
        o = _tokens(output) if sep else 0
        if p + o <= 0:
            raise ValueError(text)
    except ValueError:
        raise ForensicsError(f"bad length `{text}`", "expected PROMPT[+OUTPUT] such as 1K+1K, 8K+1K, 32K or 3000+500",
                             hint="K = 1024 tokens, M = 1024 x 1024") from None
    return Length(re.sub(r"\s+", "", text).upper(), p, o, source)


def parse_lengths(text: str | None) -> list[Length]:
    """The `--lengths` list (comma-separated); the defaults when None or empty."""
    if not text:
        return [parse_length(x, "default") for x in DEFAULT_LENGTHS]
    return [parse_length(x) for x in text.split(",") if x.strip()]


@dataclass
class Limit:
    """A number the capacity rests on, where it came from."""

    name: str
    value: float | None
    section: str | None = None
    file: str | None = None
    line: int | None = None
    raw: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": _num(self.value), "section": self.section,
                "file": self.file, "line": self.line, "raw": self.raw}

    def where(self) -> str:
        if self.value is None:
            return "not in the logs"
        src = f"{self.section} {self.name}"
        return f"{src} ({self.file}:{self.line})" if self.file else src


@dataclass
class RunCapacity:
    run_id: str
    engine: str | None
    kv_tokens: Limit
    seq_cap: Limit
    engines: Limit
    context: Limit
    rows: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "engine": self.engine,
                "kv_tokens_per_engine": self.kv_tokens.as_dict(), "seq_cap": self.seq_cap.as_dict(),
                "engines": self.engines.as_dict(), "context_len": self.context.as_dict(), "rows": self.rows}


def _num(v: float | None) -> int | float | None:
    if v is None:
        return None
    return int(v) if float(v).is_integer() else float(v)


def _pick(facts: dict[tuple[str, str], tuple], name: str, choices: Sequence[tuple[str, str]]) -> Limit:
    for section, fact in choices:
        row = facts.get((section, fact))
        if row is not None and row[0] is not None:
            return Limit(fact, row[0], section, row[1], row[2], row[3])
    return Limit(name, None)


def _facts(con: Connection, run_id: str) -> dict[tuple[str, str], tuple]:
    rows = con.execute(
        "SELECT section, name, value_num, file, line, raw FROM facts WHERE run_id = ? AND value_num IS NOT NULL "
        "ORDER BY section, name, line NULLS LAST", [run_id]).fetchall()
    out: dict[tuple[str, str], tuple] = {}
    for section, name, value, file, line, raw in rows:
        out.setdefault((section, name), (value, file, line, raw))
    return out


def bench_lengths(con: Connection, run_id: str) -> list[Length]:
    """The input+output lengths the run's benchmark points used.

    `random_input_len` / `random_output_len` where the tool recorded them, else the point's
    total tokens / completed requests (rounded). One entry per distinct pair, in point order.
    """
    rows = con.execute(
        """SELECT random_input_len, random_output_len, total_input_tokens, total_output_tokens, completed
           FROM bench_points WHERE run_id = ? ORDER BY source_file, point_index""", [run_id]).fetchall()
    seen: list[Length] = []
    for ri, ro, ti, to, done in rows:
        if ri is not None and ro is not None:
            p, o, how = int(ri), int(ro), "random"
        elif done and ti is not None and to is not None:
            p, o, how = int(round(ti / done)), int(round(to / done)), "mean"
        else:
            continue
        if p + o <= 0 or any(x.prompt == p and x.output == o for x in seen):
            continue
        seen.append(Length(f"{p}+{o}", p, o, f"bench ({how})"))
    return seen


def capacity(con: Connection, run_id: str, lengths: Sequence[Length], with_bench: bool = True) -> RunCapacity:
    """The capacity table of one run.

    Raises:
        ForensicsError: the run is not in the archive.
    """
    run = con.execute("SELECT engine FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if run is None:
        raise ForensicsError(f"no run `{run_id}` in the archive", hint="list runs with `forensics runs`")
    facts = _facts(con, run_id)
    res = RunCapacity(
        run_id=run_id, engine=run[0],
        kv_tokens=_pick(facts, "kv_cache_tokens", [("effective", "kv_cache_tokens")]),
        seq_cap=_pick(facts, "max_running_requests", [("effective", "max_running_requests"),
                                                      ("requested", "max_num_seqs"),
                                                      ("requested", "max_running_requests")]),
        engines=_pick(facts, "data_parallel_size", [("effective", "data_parallel_size"),
                                                    ("requested", "data_parallel_size"),
                                                    ("requested", "dp_size")]),
        context=_pick(facts, "context_len", [("effective", "context_len"), ("requested", "max_model_len"),
                                             ("requested", "context_length")]),
    )
    engines = int(res.engines.value) if res.engines.value else 1
    all_lengths = list(lengths)
    if with_bench:
        for b in bench_lengths(con, run_id):
            if not any(x.prompt == b.prompt and x.output == b.output for x in all_lengths):
                all_lengths.append(b)
    for ln in all_lengths:
        row: dict[str, Any] = {"length": ln.label, "prompt": ln.prompt, "output": ln.output, "tokens": ln.tokens,
                               "source": ln.source, "seq_cap": _num(res.seq_cap.value), "kv_fit": None,
                               "fits": None, "binding": None}
        if res.context.value is not None and ln.tokens > res.context.value:
            row["binding"] = "context"
            res.rows.append(row)
            continue
        kv_fit = math.floor(res.kv_tokens.value / ln.tokens) * engines if res.kv_tokens.value is not None else None
        cap = int(res.seq_cap.value) * engines if res.seq_cap.value is not None else None
        row["kv_fit"] = kv_fit
        if cap is not None and kv_fit is not None:
            row["fits"], row["binding"] = (cap, "seq cap") if cap <= kv_fit else (kv_fit, "kv")
        elif cap is not None:
            row["fits"], row["binding"] = cap, "seq cap (kv unknown)"
        elif kv_fit is not None:
            row["fits"], row["binding"] = kv_fit, "kv (seq cap unknown)"
        res.rows.append(row)
    return res


# ---------------------------------------------------------------------------------------------
# output (strings only)

def _cell(v: Any) -> str:
    return "?" if v is None else str(v)


def format_capacity(results: Sequence[RunCapacity], fmt: str) -> str:
    """Render as `json`, `md` or `table`; "-" marks a length beyond the context."""
    if fmt == "json":
        return json.dumps({"schema": SCHEMA, "runs": [r.as_dict() for r in results]}, indent=2,
                          ensure_ascii=False, default=str) + "\n"
    from tabulate import tabulate

    out: list[str] = []
    headers = ["length", "prompt+output", "fits", "binding", "seq cap", "kv fit", "source"]
    for r in results:
        body = []
        for row in r.rows:
            if row["binding"] == "context":
                body.append([row["length"], row["tokens"], "-", f"> context {_num(r.context.value)}", "-", "-",
                             row["source"]])
            else:
                body.append([row["length"], row["tokens"], _cell(row["fits"]), row["binding"] or "unknown",
                             _cell(row["seq_cap"]), _cell(row["kv_fit"]), row["source"]])
        lines = [
            f"KV tokens per engine: {_cell(_num(r.kv_tokens.value))} [{r.kv_tokens.where()}]",
            f"engines: {_num(r.engines.value) or 1} [{r.engines.where() if r.engines.value else 'default 1'}]",
            f"sequence cap: {_cell(_num(r.seq_cap.value))} [{r.seq_cap.where()}]",
            f"context: {_cell(_num(r.context.value))} [{r.context.where()}]",
        ]
        if fmt == "md":
            out.append(f"## {r.run_id} ({r.engine or 'unknown engine'})\n")
            out.extend(f"- {x}" for x in lines)
            out.append("")
            out.append(tabulate(body, headers=headers, tablefmt="github"))
        else:
            out.append(f"{r.run_id} ({r.engine or 'unknown engine'})")
            out.extend(f"  {x}" for x in lines)
            out.append("")
            out.append(tabulate(body, headers=headers))
        out.append("")
    return "\n".join(out)
