"""`python -m agent_memory …` runs the `memory` command."""

from agent_memory.entrypoints.cli.client import main

if __name__ == "__main__":
    main()
