"""The stages run end to end: sources into an ``analysis.Analysis``, job by job, in several
processes where that pays (``diagnosing``)."""
