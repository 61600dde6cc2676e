"""The fast scan: sink JSONL (and stream-logs text, gcloud JSON) read without a full record
per line.

One entry, :func:`scan`: for each input it takes (:func:`takes`), what the classify stage
consumes (:class:`RangeScan`: the per-``(job, task, vm)`` tally of every line, the events of the
lines a rule matches, and the input's line accounting), identical to reading the same input
record by record. Inside:

- ``jsonl``: the per-block scanner (``JsonlScanner``) and the block reader;
- ``blockdecode``: one msgspec call per block, after two Hyperscan passes prove it reads every
  line as the line-by-line reader would;
- ``parallel``: large inputs cut into byte ranges at line ends, scanned by forked workers (or a
  cluster's), merged in order;
- ``dispatch``: which inputs are taken, and where each is read;
- ``streamlogs``, ``gcloudjson``, ``readers``: the same for the other readers' inputs, read into
  the same tally (gcloud's array rewritten as sink lines for ``jsonl``'s scanner), and cut into
  byte ranges where a range can be read apart.

Private: nothing outside ``analyzer.classify.collector`` (and ``analyzer.engines.dask``, which runs
its tasks
elsewhere) imports it; the later stages never load it.
"""

from analyzer.classify._fastscan.dispatch import Cluster, Matcher, can_scan, scan, takes
from analyzer.classify._fastscan.parallel import BookLike, RangeScan

__all__ = ["BookLike", "Cluster", "Matcher", "RangeScan", "can_scan", "scan", "takes"]
