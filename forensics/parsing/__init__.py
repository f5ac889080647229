"""Reading engine logs: envelopes, pattern specs, the scanner and config parsers."""

# Set by a program that owns its process (the CLI): the batch path may then make pyarrow's
# default memory pool one that hands freed memory back (jemalloc, else the system allocator;
# not when ARROW_DEFAULT_MEMORY_POOL is set). With the default mimalloc pool a scan kept
# ~40 MiB more resident for the same speed (1 GiB log, 8 MiB chunks: 217 MiB against
# 177-180 MiB). A library user's process is left as it is.
OWN_PROCESS = False
