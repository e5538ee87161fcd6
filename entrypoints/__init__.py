"""Entrypoints: the CLI, MCP and REST doors, the settings, and the composition root that wires them."""
