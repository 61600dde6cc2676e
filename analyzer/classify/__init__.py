"""The classify stage: records through the rule book into events, kept per job.

``collector`` streams records and keeps what matters per job in an ``eventstore`` (thinned,
long texts on disk via ``longtext``) and hands on one ``joblog.JobLog`` per job; ``events`` holds
the types rules produce; ``_fastscan`` is the stage's private engine for large files."""
