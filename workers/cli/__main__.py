"""`python -m workers.cli`: the agentmemory command line."""

from workers.cli.main import main

if __name__ == "__main__":
    main()
