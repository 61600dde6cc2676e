"""jobdoctor: diagnose Vertex AI custom training jobs from their Cloud Logging logs."""

from __future__ import annotations

__version__ = "0.1.0"
