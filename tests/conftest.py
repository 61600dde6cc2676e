"""Test-wide settings."""

from __future__ import annotations

import os
import tempfile

from analyzer.cache import CACHE_ENV

# The tests (and the CLI runs they start) keep their cache apart from the user's.
os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="jobdoctor-test-cache-")
