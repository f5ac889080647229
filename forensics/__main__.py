"""`python -m forensics`."""
from forensics.cli import cli

cli()
