"""Rules: `rules/<group>/<name>.sql` files with a `-- key: value` header; each returned row is a finding.

A rule file is plain DuckDB SQL that runs unchanged in the duckdb shell against an archive:

    -- id: limits.running_below_requested
    -- title: The engine allows fewer running requests than requested
    -- severity: warning
    -- explanation: ...
    --   a line that starts with `--` plus two or more spaces continues the previous key
    -- remedy: ...
    -- evidence: requested, allowed
    SELECT run_id, message, evidence, requested, allowed FROM ...

The loader checks the contract (see `load_rule`): the header is complete, `id` is
`<folder>.<file stem>`, the body is exactly one SELECT, and running it on an empty archive
yields `run_id`, `message`, `evidence` (a LIST of STRUCT(file, line, raw)) and every column the
header's `evidence:` names. An optional `severity` column overrides the header's severity row
by row (one of info|warning|error|critical); the header's severity is the default and what
`forensics rules` lists.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

from forensics.archive import Connection, insert_rows, memory_archive
from forensics.errors import ForensicsError, RuleSpecError
from forensics.model import SEVERITIES, Evidence, Finding
from forensics.resources import data_dir

REQUIRED_KEYS = ("id", "title", "severity", "explanation", "remedy", "evidence")
OPTIONAL_KEYS = ("aliases", "engines")
BASE_COLUMNS = ("run_id", "message", "evidence")
EVIDENCE_FIELDS = ("file", "line", "raw")
CHECK_SCHEMA = "forensics.check/1"

_KEY_RE = re.compile(r"^--\s?([a-z_]+):\s*(.*)$")
_CONT_RE = re.compile(r"^--\s{2,}(\S.*)$")
_ID_RE = re.compile(r"^[a-z][a-z0-9_]*\.[a-z][a-z0-9_]*$")
_SQL_LINE_RE = re.compile(r"LINE (\d+):")


@dataclass(frozen=True)
class Rule:
    """One loaded and checked rule file."""

    id: str
    title: str
    severity: str
    explanation: str
    remedy: str
    evidence: tuple[str, ...]
    sql: str
    path: Path
    body_line: int  # 1-based line of the file where the SQL body starts
    aliases: tuple[str, ...] = ()
    engines: tuple[str, ...] = ()
    settings: tuple[str, ...] = field(default=())  # rule_settings keys the SQL reads

    @property
    def group(self) -> str:
        return self.id.split(".", 1)[0]


def _err(what: str, path: Path, line: int | None, why: str, text: str = "", hint: str = "") -> RuleSpecError:
    where = f"{path}:{line}" if line else str(path)
    if text:
        where += f": {text.strip()[:160]}"
    return RuleSpecError(what, why, where, hint or "see docs/rules.md (rule file contract)")


def parse_header(text: str, path: Path) -> tuple[dict[str, str], dict[str, int], int]:
    """Split a rule file into its header and body.

    Returns:
        (header values, line of each key, 1-based line where the body starts).

    Raises:
        RuleSpecError: a header line is neither `-- key: value` nor a continuation, or a key repeats.
    """
    header: dict[str, str] = {}
    lines_of: dict[str, int] = {}
    last: str | None = None
    lines = text.splitlines()
    body_line = len(lines) + 1
    for i, line in enumerate(lines, start=1):
        if not line.startswith("--"):
            body_line = i
            break
        cont = _CONT_RE.match(line)
        if cont and last is not None:
            header[last] += " " + cont.group(1).strip()
            continue
        m = _KEY_RE.match(line)
        if m:
            key = m.group(1)
            if key in header:
                raise _err("duplicate header key", path, i, f"`{key}` is set twice", line)
            header[key], lines_of[key], last = m.group(2).strip(), i, key
            continue
        if line.strip() in ("--", ""):
            last = None
            continue
        raise _err("bad header line", path, i, "expected `-- key: value` (or `--   continuation`)", line)
    return header, lines_of, body_line


def _split_list(value: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in value.split(",") if x.strip())


def _column_type_ok(type_name: str) -> bool:
    t = type_name.replace('"', "").upper()
    if not (t.startswith("STRUCT(") and t.endswith(")[]")):
        return False
    names = {part.strip().split(" ", 1)[0].lower() for part in t[len("STRUCT("):-3].split(",")}
    return set(EVIDENCE_FIELDS) <= names


def _sql_line(msg: str, body_line: int) -> int | None:
    m = _SQL_LINE_RE.search(msg)
    return body_line + int(m.group(1)) - 1 if m else None


def _statements(con: Connection, sql: str) -> list[Any]:
    # DuckDB's own parser splits statements (a semicolon inside a string literal is not a split).
    return con.extract_statements(sql)


def load_rule(path: Path, root: Path, probe: Connection | None = None) -> Rule:
    """Read one rule file and check its contract.

    Args:
        path: the `.sql` file, `root/<group>/<name>.sql`.
        root: the rules folder it was found in (gives the expected id).
        probe: an empty archive connection to run the rule on (made when None).

    Raises:
        RuleSpecError: header incomplete or invalid, id not `<folder>.<stem>`, body not exactly one
            SELECT, SQL that fails on the empty schema, or missing/mistyped result columns.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _err("cannot read rule", path, None, str(exc)) from None
    header, lines_of, body_line = parse_header(text, path)
    for key in REQUIRED_KEYS:
        if not header.get(key):
            raise _err("rule header incomplete", path, 1, f"missing `-- {key}: ...`",
                       hint=f"add a `-- {key}: ...` line to the header (keys: {', '.join(REQUIRED_KEYS)})")
    unknown = sorted(set(header) - set(REQUIRED_KEYS) - set(OPTIONAL_KEYS))
    if unknown:
        k = unknown[0]
        raise _err("unknown header key", path, lines_of[k], f"`{k}` is not one of "
                   f"{', '.join(REQUIRED_KEYS + OPTIONAL_KEYS)}", f"-- {k}: {header[k]}")
    rel = path.relative_to(root)
    expected_id = f"{rel.parent.as_posix().replace('/', '.')}.{path.stem}"
    if header["id"] != expected_id or not _ID_RE.match(header["id"]):
        raise _err("rule id does not match its file", path, lines_of["id"],
                   f"id `{header['id']}` must be `{expected_id}` (<folder>.<file stem>, lowercase, dotted)",
                   f"-- id: {header['id']}",
                   hint=f"rename the file or set `-- id: {expected_id}`; keep the old id in `-- aliases:`")
    sev = header["severity"]
    if sev not in SEVERITIES:
        raise _err("bad severity", path, lines_of["severity"], f"`{sev}` is not one of {', '.join(SEVERITIES)}",
                   f"-- severity: {sev}")
    all_lines = text.splitlines()
    while body_line <= len(all_lines) and not all_lines[body_line - 1].strip():
        body_line += 1  # so that DuckDB's "LINE n" maps onto the file
    body = "\n".join(all_lines[body_line - 1:])
    if not body.strip():
        raise _err("rule has no SQL", path, body_line, "a SELECT must follow the header")
    own = probe is None
    con = memory_archive() if own else probe
    try:
        try:
            stmts = _statements(con, body)
        except Exception as exc:  # duckdb.ParserException; only archive imports duckdb
            msg = str(exc).splitlines()[0]
            raise _err("rule SQL does not parse", path, _sql_line(str(exc), body_line) or body_line, msg) from None
        if len(stmts) != 1:
            raise _err("rule must be exactly one statement", path, body_line,
                       f"found {len(stmts)} statements", hint="keep one SELECT; move the rest into CTEs (WITH ...)")
        kind = getattr(stmts[0].type, "name", str(stmts[0].type))
        if kind != "SELECT":
            raise _err("rule must be a SELECT", path, body_line, f"found a {kind} statement")
        sql = body.strip().rstrip(";").strip()
        try:
            cols = [(r[0], r[1]) for r in con.execute(f"DESCRIBE {sql}").fetchall()]
            con.execute(sql).fetchall()
        except Exception as exc:  # duckdb.Error (binder, catalog, conversion)
            msg = str(exc).splitlines()[0]
            raise _err("rule SQL fails on the empty archive", path,
                       _sql_line(str(exc), body_line) or body_line, msg) from None
    finally:
        if own:
            con.close()
    declared = _split_list(header["evidence"])
    have = {name: typ for name, typ in cols}
    for col in BASE_COLUMNS + declared:
        if col not in have:
            raise _err("rule result lacks a column", path, body_line,
                       f"`{col}` is required (run_id, message, evidence and the header's evidence: columns); "
                       f"got {', '.join(have)}")
    if not _column_type_ok(have["evidence"]):
        raise _err("evidence column has the wrong type", path, body_line,
                   f"`evidence` is {have['evidence']}; it must be a LIST of STRUCT(file VARCHAR, line INTEGER, raw VARCHAR)",
                   hint="build it as [{'file': f.file, 'line': f.line, 'raw': f.raw}, ...] or list({...})")
    settings = tuple(sorted(set(re.findall(r"key\s*=\s*'([a-z0-9_]+)'", sql))))
    return Rule(id=header["id"], title=header["title"], severity=sev, explanation=header["explanation"],
                remedy=header["remedy"], evidence=declared, sql=sql, path=path, body_line=body_line,
                aliases=_split_list(header.get("aliases", "")), engines=_split_list(header.get("engines", "")),
                settings=settings)


VIEWS_FOLDER = "views"  # rules/views/*.sql define TEMP views (clean_stats.sql), not rules


def rule_files(root: Path) -> list[Path]:
    """The `.sql` files under a rules folder, `<group>/<name>.sql`, sorted (`views/` is skipped)."""
    return sorted(p for p in root.rglob("*.sql")
                  if p.is_file() and p.relative_to(root).parts[0] != VIEWS_FOLDER)


def load_rules(extra_dirs: Sequence[str | Path] = (), shipped: bool = True) -> list[Rule]:
    """Load the shipped rules plus every rule under `extra_dirs`, checking each contract.

    Raises:
        RuleSpecError: a rule breaks its contract, a folder is missing, or two rules share an id.
    """
    roots: list[Path] = [data_dir("rules")] if shipped else []
    for d in extra_dirs:
        p = Path(d)
        if not p.is_dir():
            raise RuleSpecError("rules folder not found", f"{p} is not a directory", str(p),
                                "pass a folder laid out as DIR/<group>/<name>.sql")
        roots.append(p)
    rules: list[Rule] = []
    seen: dict[str, Path] = {}
    probe = memory_archive()
    try:
        for root in roots:
            for path in rule_files(root):
                rule = load_rule(path, root, probe)
                for name in (rule.id, *rule.aliases):
                    if name in seen:
                        raise _err("duplicate rule id", path, 1, f"`{name}` is also defined by {seen[name]}")
                    seen[name] = path
                rules.append(rule)
    finally:
        probe.close()
    return sorted(rules, key=lambda r: r.id)


def find_rule(rules: Iterable[Rule], rule_id: str) -> Rule | None:
    """A rule by id or alias."""
    for r in rules:
        if rule_id == r.id or rule_id in r.aliases:
            return r
    return None


def apply_settings(con: Connection, overrides: dict[str, float]) -> None:
    """Override thresholds for this connection only (`forensics check --set key=value`).

    Creates a TEMP table `rule_settings` copied from the archive's; DuckDB resolves an unqualified
    name in the temp catalog before `main`, so rules see the overrides unchanged, and this works on
    a read-only connection. The archive file is not modified.

    Raises:
        ForensicsError: a key that the archive's rule_settings does not define.
    """
    if not overrides:
        return
    known = {k for (k,) in con.execute("SELECT key FROM main.rule_settings").fetchall()}
    for key in overrides:
        if key not in known:
            raise ForensicsError(f"unknown setting `{key}`", f"known settings: {', '.join(sorted(known))}",
                                 hint="list them with `forensics rules --settings`")
    con.execute("CREATE OR REPLACE TEMP TABLE rule_settings AS SELECT key, value, doc FROM main.rule_settings")
    for key, value in overrides.items():
        con.execute("UPDATE temp.rule_settings SET value = ? WHERE key = ?", [float(value), key])


def parse_setting(text: str) -> tuple[str, float]:
    """`key=value` from `--set`.

    Raises:
        ForensicsError: not `key=number`.
    """
    key, sep, value = text.partition("=")
    try:
        if not sep or not key.strip():
            raise ValueError
        return key.strip(), float(value)
    except ValueError:
        raise ForensicsError(f"bad --set `{text}`", "expected key=number",
                             hint="e.g. --set truncated_fraction=0.25") from None


def settings(con: Connection) -> list[tuple[str, float, str]]:
    """The thresholds the rules read: key, value, doc."""
    return [tuple(r) for r in con.execute("SELECT key, value, doc FROM rule_settings ORDER BY key").fetchall()]


def _evidence(items: Any) -> list[Evidence]:
    out: list[Evidence] = []
    for e in items or []:
        if not e or (e.get("file") is None and e.get("raw") is None):
            continue
        line = e.get("line")
        out.append(Evidence(file=e.get("file") or "", line=int(line) if line is not None else None, raw=e.get("raw") or ""))
    return out


def jsonable(value: Any) -> Any:
    """A DuckDB value as plain JSON: Decimal -> int or float, dates -> ISO text, lists and structs kept."""
    from datetime import date, time as dtime, timedelta
    from decimal import Decimal

    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime, date, dtime)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return str(value)


def run_rule(con: Connection, rule: Rule) -> list[Finding]:
    """Run one rule; each row becomes a finding.

    Raises:
        RuleSpecError: the SQL fails on this archive or returns a bad severity.
    """
    try:
        cur = con.execute(rule.sql)
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
    except Exception as exc:  # duckdb.Error
        raise _err(f"rule {rule.id} failed", rule.path, _sql_line(str(exc), rule.body_line) or rule.body_line,
                   str(exc).splitlines()[0]) from None
    out = []
    for row in rows:
        rec = dict(zip(names, row))
        sev = rec.get("severity") or rule.severity
        if sev not in SEVERITIES:
            raise _err(f"rule {rule.id} returned a bad severity", rule.path, rule.body_line,
                       f"`{sev}` is not one of {', '.join(SEVERITIES)}")
        out.append(Finding(rule=rule.id, severity=sev, title=rule.title, message=str(rec["message"]),
                           run=rec["run_id"], evidence=_evidence(rec["evidence"]), rule_file=str(rule.path),
                           details={c: jsonable(rec.get(c)) for c in rule.evidence}))
    return out


def run_rules(con: Connection, rules: Iterable[Rule], runs: Iterable[str] | None = None) -> list[Finding]:
    """Run rules on an archive connection (open it read-only) and return their findings.

    Args:
        con: the archive.
        rules: from `load_rules`.
        runs: keep only findings of these run ids (None: all runs).
    """
    keep = set(runs) if runs is not None else None
    findings: list[Finding] = []
    for rule in rules:
        findings.extend(f for f in run_rule(con, rule) if keep is None or f.run in keep)
    return findings


def store_findings(con: Connection, rules: Iterable[Rule], runs: Iterable[str], findings: Sequence[Finding]) -> int:
    """Replace the stored findings of these rules on these runs (a writable connection)."""
    rule_ids = [r.id for r in rules]
    run_ids = list(runs)
    if rule_ids and run_ids:
        con.execute("DELETE FROM findings WHERE list_contains(?, run_id) AND list_contains(?, rule)", [run_ids, rule_ids])
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    rows = [{"run_id": f.run, "rule": f.rule, "severity": f.severity, "title": f.title, "message": f.message,
             "evidence_json": json.dumps([e.as_dict() for e in f.evidence], ensure_ascii=False),
             "rule_file": f.rule_file, "checked_at": now} for f in findings]
    return insert_rows(con, "findings", rows)


# ---------------------------------------------------------------------------------------------
# output (strings only)

def check_dict(runs: Sequence[str], findings: Sequence[Finding]) -> dict[str, Any]:
    """The `forensics check --format json` document."""
    return {"schema": CHECK_SCHEMA, "runs": list(runs), "findings": [f.as_dict() for f in findings]}


def _where(f: Finding) -> str:
    return ", ".join(f"{e.file}:{e.line}" if e.line is not None else e.file for e in f.evidence[:3])


def format_check(runs: Sequence[str], findings: Sequence[Finding], fmt: str) -> str:
    """Render check results as `json`, `md` or `table`."""
    if fmt == "json":
        return json.dumps(check_dict(runs, findings), indent=2, ensure_ascii=False, default=str)
    if fmt == "md":
        out = [f"# forensics check: {len(runs)} run(s), {len(findings)} finding(s)", ""]
        for f in findings:
            out.append(f"## {f.severity}: {f.rule} ({f.run})")
            out.append("")
            out.append(f.message)
            out.append("")
            for e in f.evidence:
                out.append(f"- `{e.file}:{e.line}` `{e.raw}`")
            if f.details:
                out.append("")
                out.append("details: " + ", ".join(f"`{k}` = {json.dumps(v, ensure_ascii=False, default=str)}"
                                                   for k, v in f.details.items()))
            out.append("")
        return "\n".join(out) + "\n"
    from tabulate import tabulate

    if not findings:
        return f"{len(runs)} run(s) checked: no findings\n"
    rows = [[f.severity, f.run, f.rule, f.message, _where(f)] for f in findings]
    return tabulate(rows, headers=["severity", "run", "rule", "message", "evidence"]) + "\n"


# ---------------------------------------------------------------------------------------------
# docs/rules.md

DOCS_PREAMBLE = """\
# Rules

<!-- Generated from the rule headers by `forensics rules --docs > docs/rules.md`; do not edit by hand.
     tests/test_docs.py fails when this file drifts from the generated text. -->

A rule is one file `rules/<group>/<name>.sql`: a header of `-- key: value` lines, then exactly one
`SELECT` over the archive tables (see `forensics/schema.sql`). Every row it returns is a finding;
no rows means the rule passes. The file runs unchanged in the duckdb shell:
`duckdb -readonly forensics.duckdb < rules/limits/running_below_requested.sql`.

## Contract (checked when rules load; a broken rule is an error, exit status 2)

- Header keys: `id`, `title`, `severity` (info, warning, error, critical), `explanation`, `remedy`,
  `evidence` (the extra result columns the rule promises, comma-separated); optional `aliases`
  (retired ids) and `engines`. A header line that starts with `--` and two or more spaces continues
  the previous key.
- `id` is `<folder>.<file stem>`, lowercase and dotted; it never changes without an `aliases:` entry.
- The body is one `SELECT` (CTEs allowed). Run on an empty archive it must return the columns
  `run_id`, `message`, `evidence` and every column named by `evidence:`.
- `evidence` is a `LIST` of `STRUCT(file VARCHAR, line INTEGER, raw VARCHAR)` built in SQL, with rows
  from each side the rule compares (for example the `cmd.sh` line and the log line).
  Benchmark records, requests and GPU samples have no raw log line; their `raw` is a short
  `key=value` description of the record and `line` is the record's line where the importer knew it.
- The columns named by `evidence:` travel with each finding: `forensics check --format json` puts
  them in the finding's `details` object (`{"column": value}`, in header order), after the
  `rule`, `severity`, `run`, `title`, `message` and `evidence` keys of the finding contract;
  `--format md` prints them under the evidence. A finding without such columns has no `details`.
- An optional `severity` column overrides the header's severity for that row (one of the four
  levels). The header's severity is the default and the one `forensics rules` lists.
- Thresholds come from the `rule_settings` table, never literals in the rule.
  `forensics check --set key=value` overrides them for one check by creating a TEMP table
  `rule_settings` on the read-only connection (DuckDB resolves temp before `main`); the archive
  file is not changed. Change them for good with
  `UPDATE rule_settings SET value = ... WHERE key = ...`.
- `rules/views/` is not a rule group: its files create TEMP views (`clean_stats.sql`, read by
  `forensics clean-stats`) and the loader skips it.
- Each rule has `rules/<group>/<name>.cases.toml` beside it, with at least one case that fires and
  one that must not; `pytest tests/test_rule_cases.py` runs them all.

## Clean statistics (`rules/views/clean_stats.sql`)

`forensics clean-stats RUN...` recomputes each benchmark point that has per-request rows without
the requests the rules flag: `failed` (success false or an error text, as `bench.failed_requests`
counts), `truncated` (`stream.truncated`'s test and `truncated_fraction`) and `cache_hit`
(`bench.prefix_cache_hit`'s test, `prefix_cache_ceiling_tps` and `prefix_cache_cold_ratio`); the
first that applies, in that order, is the reason. The SQL is a file of `CREATE TEMP VIEW`
statements, created on demand on the read-only connection (the archive is not changed, `--set`
overrides apply, and it runs in the duckdb shell:
`duckdb -readonly forensics.duckdb -c ".read rules/views/clean_stats.sql" -c "FROM clean_stats"`):

- `clean_request_flags`: every request with `reason` (NULL = kept), `why`, its prefill rate and TPOT;
- `clean_excluded`: the excluded requests only (`forensics clean-stats --excluded`);
- `clean_stats`: per point the original `mean/median/p99_ttft_ms`, `..._tpot_ms` and
  `output_throughput` next to `clean_...` recomputed over the kept requests (TPOT = (e2e - TTFT) /
  (output tokens - 1) for requests with more than one output token; output throughput = kept
  output tokens / the point's duration; percentiles interpolate linearly, as numpy does), with
  the counts `requests`, `kept`, `excluded_cache_hit`, `excluded_truncated`, `excluded_failed`.

## Storing findings

`forensics check` runs the rules on a read-only connection, then replaces the stored findings of
the checked runs and loaded rules in the archive's `findings` table through a separate short
writable connection. It stores nothing with `--no-store`, with `--set` (findings under changed
thresholds would look like ordinary ones later), or when it ingested RUN_DIRs into a temporary
archive because no `--archive` was given.
"""


def generate_docs(rules: Sequence[Rule]) -> str:
    """The text of docs/rules.md, built from the rule headers and the default settings."""
    out = [DOCS_PREAMBLE]
    con = memory_archive()
    try:
        sets = settings(con)
    finally:
        con.close()
    out.append("## Settings\n")
    out.append("| key | default | meaning |")
    out.append("|---|---|---|")
    for key, value, doc in sets:
        out.append(f"| `{key}` | {value:g} | {doc} |")
    out.append("")
    out.append("## Rule list\n")
    out.append("| id | severity | title |")
    out.append("|---|---|---|")
    for r in rules:
        out.append(f"| [`{r.id}`](#{r.id.replace('.', '')}) | {r.severity} | {r.title} |")
    out.append("")
    group = None
    for r in rules:
        if r.group != group:
            group = r.group
            out.append(f"## {group}\n")
        out.append(f"### {r.id}\n")
        out.append(f"**{r.title}** (severity: {r.severity})\n")
        out.append(f"{r.explanation}\n")
        out.append(f"*Remedy:* {r.remedy}\n")
        extra = [f"columns: {', '.join(f'`{c}`' for c in r.evidence)}"]
        if r.settings:
            extra.append(f"settings: {', '.join(f'`{s}`' for s in r.settings)}")
        if r.engines:
            extra.append(f"engines: {', '.join(r.engines)}")
        if r.aliases:
            extra.append(f"aliases: {', '.join(r.aliases)}")
        extra.append(f"file: `rules/{r.group}/{r.path.name}`")
        out.append("; ".join(extra) + "\n")
    from forensics.signatures import load as load_signatures

    out.append("## Fatal-error signatures\n")
    out.append("`rules/signatures.toml` maps an error's `TYPE: MESSAGE` to a known cause (first match wins).\n")
    out.append("| id | title | remedy |")
    out.append("|---|---|---|")
    for sig in load_signatures():
        out.append(f"| `{sig.id}` | {sig.title} | {sig.remedy} |")
    return "\n".join(out).rstrip("\n") + "\n"
