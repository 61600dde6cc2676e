"""The ``jobdoctor`` command line: the typer ``app``, the fast ``console`` entry, what the
commands do (``commands``) and the fleet report command (``report_command``)."""
