"""What the doors share with the adapters, offered in one place: the doors import adapters only from here and
from the composition root (bootstrap.py), an import-linter contract in pyproject.toml says so.

- the plain shape of a Memory (lists, "global", timestamps) that the JSON edge and the stored records share;
- owner-only files: the umask every `memory` command and server runs under, and the check `status` words.
"""

from __future__ import annotations

from agent_memory.adapters.shared.plain import register_memory_shape as register_memory_shape
from agent_memory.adapters.shared.private import exposed_paths as exposed_paths
from agent_memory.adapters.shared.private import keep_owner_only as keep_owner_only
from agent_memory.adapters.shared.private import owner_only_files as owner_only_files
