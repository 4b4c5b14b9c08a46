"""``python -m nnkit.cli``: the same as the ``nnkit`` console script."""

from nnkit.cli.app import main

if __name__ == "__main__":
    main()
