"""The `memory` command's door: the thin client, its arguments, handlers and text output."""
