"""The command line with a progress bar that waits an hour before it shows: whatever the
machine's load, a read of a small file ends first (``python -m tests.patient_cli ARGS``)."""

from __future__ import annotations

import analyzer.cli.commands
from analyzer.cli.console import main

analyzer.cli.commands.PROGRESS_DELAY_S = 3600.0

if __name__ == "__main__":
    main()
