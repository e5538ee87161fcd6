"""Deprecated (0.2.0's path): the agent tools are `agent_memory.tools` now; this alias warns and will go in 0.4.0."""

from __future__ import annotations

import warnings

from agent_memory.tools import *  # noqa: F403
from agent_memory.tools import __all__ as __all__

warnings.warn(
    "agent_memory.entrypoints.agent_tools is deprecated: import from agent_memory.tools (or agent_memory) instead.",
    DeprecationWarning,
    stacklevel=2,
)
