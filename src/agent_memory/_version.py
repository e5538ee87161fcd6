"""The one version source: read by the build (pyproject), `memory --version`, MCP server info and OpenAPI."""

__version__ = "0.2.0"
