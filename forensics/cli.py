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
        res = scan_file(file, cmd=cmd)
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


def main() -> None:  # pragma: no cover - console entry point alias
    cli()
