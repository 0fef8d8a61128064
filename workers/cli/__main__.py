"""`python -m workers.cli`: the agentmemory command line."""

from workers.cli.entry import main

if __name__ == "__main__":
    main()
