"""The local memory server behind the `memory` command: one process per data dir, a Unix socket."""
