"""``python -m analyzer.cli``: the ``jobdoctor`` console script."""

from analyzer.cli.console import main

main()
