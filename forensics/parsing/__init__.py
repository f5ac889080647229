"""Reading engine logs: envelopes, pattern specs, the scanner and config parsers."""
