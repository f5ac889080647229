"""docs/rules.md is generated from the rule headers; it must not drift."""
from __future__ import annotations

from forensics.cli import cli
from forensics.rules import generate_docs, load_rules

from .conftest import ROOT

DOC = ROOT / "docs" / "rules.md"


def test_rules_doc_matches_the_rule_headers() -> None:
    assert DOC.read_text(encoding="utf-8") == generate_docs(load_rules()), (
        "docs/rules.md is stale: run `forensics rules --docs > docs/rules.md`")


def test_every_rule_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for rule in load_rules():
        assert f"### {rule.id}" in text


def test_rule_commands_have_help(runner) -> None:
    for args in (["rules", "--help"], ["rules", "explain", "--help"], ["check", "--help"]):
        result = runner.invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert len(result.output.strip().splitlines()) > 3


def test_every_command_has_help_and_is_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for name, command in cli.commands.items():
        assert (command.help or "").strip(), f"`forensics {name}` has no help text"
        assert f"forensics {name}" in readme, f"`forensics {name}` is not in README.md"
