"""``python -m analyzer``: the ``jobdoctor`` console script."""

from analyzer.cli.console import main

main()
