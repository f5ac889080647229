"""The command line: the only module that prints or exits; everything else is the library."""
from __future__ import annotations

import sys

import click

from forensics.errors import ForensicsError

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2


def _fail(exc: ForensicsError) -> None:
    click.echo(f"Error: {exc.one_line()}", err=True)
    sys.exit(exc.exit_code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="forensics")
def cli() -> None:
    """Read what vLLM and SGLang really did, with evidence, and check it."""
    import forensics.parsing

    forensics.parsing.OWN_PROCESS = True  # this process is ours: see forensics/parsing/__init__.py


@cli.command()
@click.argument("file", type=click.Path(dir_okay=True, allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md"]), default="table", show_default=True)
@click.option("--cmd", "cmd", type=click.Path(dir_okay=False), help="launch command file (default: cmd.sh beside the log)")
@click.option("--unmatched", is_flag=True, help="list lines that look like facts but matched no pattern")
@click.option("--fail-on", type=click.Choice(["info", "warning", "error", "critical", "never"]), default="never",
              show_default=True, help="exit 1 when a finding reaches this severity")
def scan(file: str, fmt: str, cmd: str | None, unmatched: bool, fail_on: str) -> None:
    """Read one engine log (plain, .gz, .zst, or - for stdin) into facts and findings."""
    from forensics import render
    from forensics.model import severity_rank
    from forensics.scan import scan_file

    try:
        size = _progress_size(file)
        if size is None:
            res = scan_file(file, cmd=cmd)
        else:
            with click.progressbar(length=size, label="scanning", file=sys.stderr) as bar:
                res = scan_file(file, cmd=cmd, on_progress=bar.update)
    except ForensicsError as exc:
        _fail(exc)
        return
    if unmatched:
        from forensics.parsing.unmatched import unmatched_templates

        try:
            groups = unmatched_templates(file)
        except ForensicsError as exc:
            _fail(exc)
            return
        click.echo(render.unmatched_text(groups) if fmt != "json" else render.unmatched_json(groups))
        return
    if fmt == "json":
        click.echo(render.scan_json(res))
    elif fmt == "md":
        click.echo(render.scan_markdown(res), nl=False)
    else:
        click.echo(render.scan_table(res), nl=False)
    if fail_on != "never" and any(severity_rank(f.severity) >= severity_rank(fail_on) for f in res.findings):
        sys.exit(EXIT_FINDINGS)


PROGRESS_MIN = 64 << 20  # a scan of a smaller log is over before a bar would help


def _progress_size(file: str) -> int | None:
    """The byte count for a scan progress bar: an uncompressed log of PROGRESS_MIN or more,
    scanned with a terminal on stderr (pipes and CI logs get no bar)."""
    if not sys.stderr.isatty():
        return None
    from forensics.parsing.reader import plain_size

    size = plain_size(file)
    return size if size is not None and size >= PROGRESS_MIN else None


@cli.command()
@click.option("--check", is_flag=True, help="check every sample line against every pattern")
def parsers(check: bool) -> None:
    """List the log patterns (id, engine, section, keyword)."""
    from tabulate import tabulate

    from forensics.parsing.spec import check as check_specs
    from forensics.parsing.spec import load_all

    try:
        ps = load_all()
        if check:
            check_specs(ps.patterns)
    except ForensicsError as exc:
        _fail(exc)
        return
    rows = [[p.id, p.engine, p.section, p.keyword] for p in ps.patterns]
    click.echo(tabulate(rows, headers=["id", "engine", "section", "keyword"]))
    if check:
        n = sum(len(p.samples) for p in ps.patterns)
        click.echo(f"\n{len(ps.patterns)} patterns, {n} samples: all samples match as stated.")


_ARCHIVE_OPTION = click.option("--archive", default="forensics.duckdb", show_default=True,
                                type=click.Path(dir_okay=False), help="the DuckDB archive file")


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@_ARCHIVE_OPTION
def ingest(paths: tuple[str, ...], archive: str) -> None:
    """Load run folders (or .tar/.tar.gz/.tar.zst archives of them) into the archive."""
    from pathlib import Path

    from forensics.ingest import discover, ingest_paths

    def wait(msg: str) -> None:
        click.echo(msg, err=True)

    try:
        bar = None
        if sys.stderr.isatty():
            total = sum(1 for _ in discover([Path(p) for p in paths]))
            bar = click.progressbar(length=total, label="ingesting runs", file=sys.stderr)
            bar.__enter__()
        report = ingest_paths(Path(archive), [Path(p) for p in paths],
                              progress=(lambda _src: bar.update(1)) if bar else None, on_wait=wait)
        if bar:
            bar.__exit__(None, None, None)
    except ForensicsError as exc:
        _fail(exc)
        return
    rows = ", ".join(f"{n} {t}" for t, n in sorted(report.rows.items()))
    click.echo(f"{archive}: {len(report.added)} added, {len(report.replaced)} replaced, "
               f"{len(report.unchanged)} unchanged, {len(report.failed)} failed" + (f" ({rows})" if rows else ""))
    for run_id, why in report.failed:
        click.echo(f"Error: run {run_id}: {why}", err=True)
    if report.failed:
        sys.exit(EXIT_ERROR)


_READ_ONLY_START = ("select", "with", "from", "describe", "show", "summarize", "explain", "pragma", "table", "values", "(")


@cli.command()
@click.argument("statement")
@_ARCHIVE_OPTION
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json", "parquet"]), default="table", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), help="output file (required for parquet)")
def sql(statement: str, archive: str, fmt: str, out: str | None) -> None:
    """Run one read-only SQL query on the archive."""
    from forensics.archive import open_archive, query

    head = statement.lstrip().lower()
    if not head.startswith(_READ_ONLY_START) or ";" in statement.strip().rstrip(";"):
        _fail(ForensicsError("refused: forensics sql runs one read-only query",
                             f"{statement.split()[0] if statement.split() else 'empty'} statements change data or files",
                             hint="use SELECT/WITH/DESCRIBE; open the file with the duckdb shell to change it"))
        return
    if fmt == "parquet" and not out:
        _fail(ForensicsError("--format parquet needs --out FILE", hint="add --out result.parquet"))
        return
    try:
        con = open_archive(archive, read_only=True)
        try:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                try:
                    rel = con.sql(statement)  # a relation streams to Arrow without the DB-API copy
                    if rel is None:
                        raise ForensicsError("query returned no table", statement.split()[0],
                                             hint="use a SELECT, WITH or DESCRIBE statement")
                    table = rel.to_arrow_table() if hasattr(rel, "to_arrow_table") else rel.arrow()
                except ForensicsError:
                    raise
                except Exception as exc:  # duckdb.Error, without importing duckdb here
                    raise ForensicsError("query failed", str(exc).splitlines()[0]) from None
                pq.write_table(table, out)
                click.echo(f"{out}: {table.num_rows} rows")
                return
            names, rows = query(con, statement)
        finally:
            con.close()
    except ForensicsError as exc:
        _fail(exc)
        return
    _emit(names, rows, fmt, out)


def _emit(names: list[str], rows: list[tuple], fmt: str, out: str | None = None) -> None:
    import csv
    import io
    import json

    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(names)
        w.writerows(rows)
        text = buf.getvalue()
    elif fmt == "json":
        text = json.dumps([dict(zip(names, r)) for r in rows], default=str, indent=1) + "\n"
    else:
        from tabulate import tabulate

        text = tabulate(rows, headers=names) + "\n"
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        click.echo(text, nl=False)


@cli.command()
@_ARCHIVE_OPTION
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
def runs(archive: str, fmt: str) -> None:
    """List runs with outcome, engine, model and key limits."""
    from forensics.archive import RUNS_SQL, open_archive, query

    try:
        con = open_archive(archive, read_only=True)
        try:
            names, rows = query(con, RUNS_SQL)
        finally:
            con.close()
    except ForensicsError as exc:
        _fail(exc)
        return
    _emit(names, rows, fmt)


@cli.command()
def schema() -> None:
    """Print the archive schema (DDL with a comment on each table)."""
    from forensics.archive import schema_sql

    click.echo(schema_sql(), nl=False)


@cli.command()
@click.argument("out_dir", type=click.Path(file_okay=False))
@_ARCHIVE_OPTION
def export(out_dir: str, archive: str) -> None:
    """Write the archive as Hive-partitioned Parquet: TABLE/campaign=NAME/*.parquet."""
    from forensics.archive import export_parquet

    try:
        counts = export_parquet(archive, out_dir)
    except ForensicsError as exc:
        _fail(exc)
        return
    for table, n in counts.items():
        click.echo(f"{out_dir}/{table}: {n} rows")


def _fake_nvml(fleet: str):
    """Test hook: the fake NVML of tests/fake_nvml.py over a fleet TOML (a source checkout only)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "tests" / "fake_nvml.py"
    spec = importlib.util.spec_from_file_location("forensics_fake_nvml", path)
    if spec is None or not path.exists():
        raise ForensicsError("cannot use --fake-fleet", f"{path} is missing", hint="run from a source checkout")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.FakeNvml(fleet)


@cli.command(context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True})
@click.option("--interval", default="1s", show_default=True, help="time between samples: 1s, 500ms, 2m")
@click.option("--out", default="gpu.parquet", show_default=True, type=click.Path(dir_okay=False),
              help="Parquet file to write; OUT.partial is the crash-safe journal while sampling")
@click.option("--recover", "recover_out", metavar="OUT", type=click.Path(dir_okay=False),
              help="turn the journal a killed run left behind (OUT.partial) into OUT, and stop")
@click.option("--fake-fleet", hidden=True, envvar="FORENSICS_FAKE_NVML", type=click.Path(exists=True, dir_okay=False))
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def sample(interval: str, out: str, recover_out: str | None, fake_fleet: str | None, command: tuple[str, ...]) -> None:
    """Sample every GPU via NVML into Parquet until COMMAND exits (its exit code is passed on) or SIGINT/SIGTERM.

    Example: forensics sample --interval 500ms --out gpu.parquet -- vllm bench serve ...
    """
    import signal

    from forensics.gpu import sampler
    from forensics.gpu.nvml import Nvml

    if recover_out:
        try:
            n, bad = sampler.recover(recover_out)
        except ForensicsError as exc:
            _fail(exc)
            return
        click.echo(f"recovered {n} rows into {recover_out.removesuffix(sampler.JOURNAL_SUFFIX)}"
                   + (f"; skipped {bad} torn line(s)" if bad else ""), err=True)
        return
    try:
        session = sampler.Session(_fake_nvml(fake_fleet) if fake_fleet else Nvml(), out, sampler.parse_interval(interval))
        old = sampler.install_signal_handlers(session)
        try:
            rc = session.run(command)
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)
    except ForensicsError as exc:
        _fail(exc)
        return
    t = session.tally
    click.echo(f"wrote {t.rows} rows ({t.ticks} samples of {t.devices} devices) to {out}", err=True)
    nulls = sorted({(m, st) for (m, st) in t.statuses})
    if nulls:
        click.echo("NULL metrics: " + ", ".join(f"{m} ({st})" for m, st in nulls), err=True)
    if t.lost:
        click.echo("WARNING: GPU lost during sampling: " + ", ".join(
            f"{g}" + (f":{m}" if m is not None else "") for g, m in sorted(t.lost, key=str)), err=True)
    if t.missing_functions:
        click.echo(f"WARNING: NVML function(s) missing: {', '.join(sorted(t.missing_functions))}", err=True)
        click.echo("HINT: the NVIDIA driver is older than these calls; upgrade it (check with `nvidia-smi`); "
                   "until then those metrics stay NULL with status function_not_found", err=True)
    sys.exit(rc)

@cli.group("rules", invoke_without_command=True)
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(file_okay=False), help="extra rules folder DIR/<group>/<name>.sql")
@click.option("--settings", "show_settings", is_flag=True, help="list the thresholds rules read (rule_settings)")
@click.option("--docs", is_flag=True, hidden=True, help="print docs/rules.md generated from the rule headers")
@click.pass_context
def rules_cmd(ctx: click.Context, rule_dirs: tuple[str, ...], show_settings: bool, docs: bool) -> None:
    """List the rules (id, severity, title); `forensics rules explain ID` explains one."""
    from tabulate import tabulate

    from forensics import rules as R

    try:
        loaded = R.load_rules(rule_dirs)
    except ForensicsError as exc:
        _fail(exc)
        return
    ctx.obj = loaded
    if ctx.invoked_subcommand is not None:
        return
    if docs:
        click.echo(R.generate_docs(loaded), nl=False)
    elif show_settings:
        from forensics.archive import memory_archive

        click.echo(tabulate(R.settings(memory_archive()), headers=["key", "default", "meaning"]))
    else:
        click.echo(tabulate([[r.id, r.severity, r.title] for r in loaded], headers=["id", "severity", "title"]))


@rules_cmd.command("explain")
@click.argument("rule_id")
@click.pass_obj
def rules_explain(loaded: list, rule_id: str) -> None:
    """Explain one rule: what it checks, why it matters and how to fix it."""
    from forensics.rules import find_rule

    rule = find_rule(loaded, rule_id)
    if rule is None:
        _fail(ForensicsError(f"no rule `{rule_id}`", hint="list them with `forensics rules`"))
        return
    click.echo(f"{rule.id} ({rule.severity}): {rule.title}\n\n{rule.explanation}\n\nRemedy: {rule.remedy}\n\nFile: {rule.path}")


@cli.command()
@click.argument("run_dirs", nargs=-1, type=click.Path(exists=True))
@click.option("--archive", type=click.Path(dir_okay=False),
              help="the DuckDB archive (default: forensics.duckdb; a temporary one when RUN_DIRs are given)")
@click.option("--rules", "rule_dirs", multiple=True, type=click.Path(file_okay=False), help="extra rules folder DIR/<group>/<name>.sql")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md"]), default="table", show_default=True)
@click.option("--fail-on", type=click.Choice(["info", "warning", "error", "critical", "never"]), default="error",
              show_default=True, help="exit 1 when a finding reaches this severity")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="override a rule_settings threshold for this check")
@click.option("--no-store", is_flag=True, help="do not write findings into the archive")
def check(run_dirs: tuple[str, ...], archive: str | None, rule_dirs: tuple[str, ...], fmt: str, fail_on: str,
          sets: tuple[str, ...], no_store: bool) -> None:
    """Run the rules on runs (ingesting RUN_DIRs first) and print the findings."""
    import tempfile
    from pathlib import Path

    from forensics import rules as R
    from forensics.archive import open_archive
    from forensics.model import severity_rank

    tmp = None
    failed: list[tuple[str, str]] = []
    try:
        overrides = dict(R.parse_setting(s) for s in sets)
        loaded = R.load_rules(rule_dirs)
        if run_dirs:
            from forensics.ingest import ingest_paths

            if archive is None:
                tmp = tempfile.TemporaryDirectory(prefix="forensics-check-")
                archive = str(Path(tmp.name) / "check.duckdb")
            report = ingest_paths(Path(archive), [Path(p) for p in run_dirs])
            run_ids = list(getattr(report, "runs", [Path(p).name for p in run_dirs]))
            failed = list(getattr(report, "failed", []))
        else:
            archive = archive or "forensics.duckdb"
            run_ids = None
        con = open_archive(archive, read_only=True)
        try:
            R.apply_settings(con, overrides)
            if run_ids is None:
                run_ids = [r for (r,) in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
            findings = R.run_rules(con, loaded, runs=run_ids)
        finally:
            con.close()
        if not (no_store or overrides or tmp is not None):
            wcon = open_archive(archive)
            try:
                R.store_findings(wcon, loaded, run_ids, findings)
            finally:
                wcon.close()
    except ForensicsError as exc:
        _fail(exc)
        return
    finally:
        if tmp is not None:
            tmp.cleanup()
    out = R.format_check(run_ids, findings, fmt)
    click.echo(out, nl=not out.endswith("\n"))
    for run_id, why in failed:
        click.echo(f"Error: cannot ingest {run_id}: {why}", err=True)
    if failed:
        sys.exit(EXIT_ERROR)
    if fail_on != "never" and any(severity_rank(f.severity) >= severity_rank(fail_on) for f in findings):
        sys.exit(EXIT_FINDINGS)


# --- capacity, clean-stats, gpu-summary: RUN arguments are run ids or run folders -------------

class _RunArgs:
    """RUN arguments resolved against an archive, the way `check` treats RUN_DIRs.

    A RUN that exists on disk (a run folder, a campaign folder, a tar) is ingested first, into
    `--archive` when given, else into a temporary archive; any other RUN is a run id already in
    the archive (default forensics.duckdb). Use as a context manager: it yields itself with
    `con` (read-only), `run_ids` and `failed` (ingest failures, reported after the output).
    """

    def __init__(self, runs: tuple[str, ...], archive: str | None) -> None:
        self.runs, self.archive = runs, archive
        self.tmp = None
        self.con = None
        self.run_ids: list[str] = []
        self.failed: list[tuple[str, str]] = []

    def __enter__(self) -> "_RunArgs":
        import tempfile
        from pathlib import Path

        from forensics.archive import open_archive

        paths = [Path(r) for r in self.runs if Path(r).exists()]
        ids = [r for r in self.runs if not Path(r).exists()]
        try:
            if paths:
                from forensics.ingest import ingest_paths

                if self.archive is None:
                    self.tmp = tempfile.TemporaryDirectory(prefix="forensics-")
                    self.archive = str(Path(self.tmp.name) / "runs.duckdb")
                report = ingest_paths(Path(self.archive), paths)
                self.run_ids.extend(report.runs)
                self.failed = list(report.failed)
            self.archive = self.archive or "forensics.duckdb"
            self.con = open_archive(self.archive, read_only=True)
            known = {r for (r,) in self.con.execute("SELECT run_id FROM runs").fetchall()}
            for rid in ids:
                if rid not in known:
                    raise ForensicsError(f"no run `{rid}` in {self.archive}", "not a run id there, nor a path",
                                         hint="list runs with `forensics runs --archive FILE`, or pass a run folder")
                self.run_ids.append(rid)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.con is not None:
            self.con.close()
            self.con = None
        if self.tmp is not None:
            self.tmp.cleanup()
            self.tmp = None

    def report_failed(self) -> None:
        for run_id, why in self.failed:
            click.echo(f"Error: cannot ingest {run_id}: {why}", err=True)
        if self.failed:
            sys.exit(EXIT_ERROR)


_RUN_ARCHIVE_OPTION = click.option(
    "--archive", type=click.Path(dir_okay=False),
    help="the DuckDB archive (default: forensics.duckdb; a temporary one when only run folders are given)")


@cli.command()
@click.argument("runs", nargs=-1, required=True)
@_RUN_ARCHIVE_OPTION
@click.option("--lengths", help="comma-separated PROMPT[+OUTPUT] (K=1024, M=1024x1024); "
              "default 1K+1K,8K+1K,32K,128K,256K,512K,1M; the run's benchmark lengths are always added")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md"]), default="table", show_default=True)
def capacity(runs: tuple[str, ...], archive: str | None, lengths: str | None, fmt: str) -> None:
    """How many sequences fit at each prompt+output length, and which limit binds (seq cap | kv)."""
    from forensics import capacity as C

    try:
        wanted = C.parse_lengths(lengths)
        with _RunArgs(runs, archive) as ra:
            results = [C.capacity(ra.con, rid, wanted) for rid in ra.run_ids]
    except ForensicsError as exc:
        _fail(exc)
        return
    click.echo(C.format_capacity(results, fmt), nl=False)
    ra.report_failed()


@cli.command("clean-stats")
@click.argument("runs", nargs=-1, required=True)
@_RUN_ARCHIVE_OPTION
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md", "csv"]), default="table", show_default=True)
@click.option("--excluded", is_flag=True, help="list the excluded requests and why, instead of the statistics")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="override a rule_settings threshold")
def clean_stats(runs: tuple[str, ...], archive: str | None, fmt: str, excluded: bool, sets: tuple[str, ...]) -> None:
    """TTFT, TPOT and output throughput per point without cache hits, truncated and failed requests."""
    from forensics import cleanstats as CS
    from forensics.rules import apply_settings, parse_setting

    try:
        overrides = dict(parse_setting(s) for s in sets)
        with _RunArgs(runs, archive) as ra:
            apply_settings(ra.con, overrides)
            CS.create_views(ra.con)
            names, rows = (CS.excluded if excluded else CS.clean_stats)(ra.con, ra.run_ids)
    except ForensicsError as exc:
        _fail(exc)
        return
    click.echo(CS.format_clean(names, rows, fmt, "excluded" if excluded else "stats"), nl=False)
    ra.report_failed()


@cli.command("gpu-summary")
@click.argument("run")
@_RUN_ARCHIVE_OPTION
@click.option("--format", "fmt", type=click.Choice(["table", "json", "md"]), default="table", show_default=True)
def gpu_summary(run: str, archive: str | None, fmt: str) -> None:
    """Per GPU in each benchmark window: max temperature, time under each clock-event reason, SM clock range."""
    from forensics import gpusummary as G

    try:
        with _RunArgs((run,), archive) as ra:
            results = [G.gpu_summary(ra.con, rid) for rid in ra.run_ids]
    except ForensicsError as exc:
        _fail(exc)
        return
    click.echo("\n".join(G.format_summary(r, fmt) for r in results), nl=False)
    ra.report_failed()


@cli.command("report")
@click.argument("run")
@click.option("--archive", type=click.Path(dir_okay=False),
              help="the DuckDB archive (default: forensics.duckdb for a run id; a temporary one for a run folder)")
@click.option("--format", "fmt", type=click.Choice(["md", "html"]), default="md", show_default=True)
@click.option("--attach", is_flag=True, help="write diagnosis.md and diagnosis.html into the run folder and record them")
@click.option("--out", type=click.Path(dir_okay=False), help="write the report to this file instead of stdout")
def report_cmd(run: str, archive: str | None, fmt: str, attach: bool, out: str | None) -> None:
    """Diagnose one run (a run id in the archive, or a run folder): verdict, timeline, findings, charts."""
    from pathlib import Path

    from forensics.archive import open_archive
    from forensics.report import attach as A
    from forensics.report import build_report, render_html, render_markdown
    from forensics.rules import load_rules

    try:
        target = A.resolve(run, archive)
        try:
            con = open_archive(target.archive, read_only=True)
            try:
                run_dir = target.run_dir or A.run_dir_of(con, target.run_id)
                rep = build_report(con, target.run_id, load_rules(), run_dir=run_dir)
            finally:
                con.close()
            texts = {"md": render_markdown(rep), "html": render_html(rep)}
            if attach:
                if run_dir is None:
                    raise ForensicsError(f"cannot attach: the folder of run {target.run_id} is not on this machine",
                                         hint="pass the run folder instead of its id")
                for f, name in (("md", "diagnosis.md"), ("html", "diagnosis.html")):
                    path = Path(run_dir) / name
                    path.write_text(texts[f], encoding="utf-8")
                    if target.temporary is None:
                        A.record(target.archive, target.run_id, f, path, rep.verdict)
                    click.echo(f"wrote {path}", err=True)
        finally:
            target.close()
    except ForensicsError as exc:
        _fail(exc)
        return
    except OSError as exc:
        _fail(ForensicsError("cannot write the report", str(exc)))
        return
    if out:
        Path(out).write_text(texts[fmt], encoding="utf-8")
        click.echo(f"wrote {out}", err=True)
    elif not attach:
        click.echo(texts[fmt], nl=False)


@cli.command("diff")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--archive", type=click.Path(dir_okay=False),
              help="the DuckDB archive (default: forensics.duckdb; a temporary one when both are run folders)")
def diff_cmd(run_a: str, run_b: str, archive: str | None) -> None:
    """What changed between two launches: configuration, backends, KV capacity, slots, findings, benchmark figures."""
    import tempfile
    from pathlib import Path

    from forensics.archive import open_archive
    from forensics.report import attach as A
    from forensics.report.diff import diff_sections, render_diff_markdown
    from forensics.rules import load_rules

    tmp = None
    try:
        if archive is None and Path(run_a).is_dir() and Path(run_b).is_dir():
            tmp = tempfile.TemporaryDirectory(prefix="forensics-diff-")
            archive = str(Path(tmp.name) / "diff.duckdb")
        ta, tb = A.resolve(run_a, archive), A.resolve(run_b, archive)
        if ta.run_id == tb.run_id:
            raise ForensicsError(f"both runs are `{ta.run_id}`", hint="compare two different runs")
        con = open_archive(ta.archive, read_only=True)
        try:
            text = render_diff_markdown(ta.run_id, tb.run_id, diff_sections(con, ta.run_id, tb.run_id, load_rules()))
        finally:
            con.close()
        ta.close()
        tb.close()
    except ForensicsError as exc:
        _fail(exc)
        return
    finally:
        if tmp is not None:
            tmp.cleanup()
    click.echo(text, nl=False)


def main() -> None:  # pragma: no cover - console entry point alias
    cli()
