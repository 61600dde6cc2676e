"""The verdict stage: the retry policy replayed, the root cause, the advice.

``policy`` (the platform's retry policy as data), ``causes`` and ``rootcause`` (what failed
and why), ``tracebacks`` (the exception behind an exit), ``work`` (work lost), ``jobspec`` (the
job's own record), ``advice``, ``predict`` (the stage's entry: a timeline into a
``diagnosis.Diagnosis``) and ``explain`` (one message)."""
