"""gcloud's conventions: the default project and region, and job names as gcloud prints them.

The defaults are read the way gcloud itself resolves them, without running it (a second or
more of start-up, and it may not be installed where the logs are read): the environment
first, then the active configuration's file under the gcloud config directory.

- project: ``CLOUDSDK_CORE_PROJECT``, ``GOOGLE_CLOUD_PROJECT``, then ``[core] project``;
- region (for the Vertex AI API): ``CLOUDSDK_AI_REGION``, then ``[ai] region``;
- the config directory: ``CLOUDSDK_CONFIG``, else ``%APPDATA%\\gcloud`` on Windows, else
  ``~/.config/gcloud``; the active configuration: ``CLOUDSDK_ACTIVE_CONFIG_NAME``, else the
  name in ``active_config``, else ``default``.
"""

from __future__ import annotations

import configparser
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from analyzer.core.errors import InputError

DEFAULT_REGION = "us-central1"

# projects/P/locations/L/customJobs/ID, as `gcloud ai custom-jobs list` and the SDK print it.
_RESOURCE = re.compile(
    r"^projects/(?P<project>[^/\s]+)/locations/(?P<region>[^/\s]+)/customJobs/(?P<job>[^/\s]+)$"
)


@dataclass(frozen=True, slots=True)
class Setting:
    """A resolved default and where it came from (named in notices and errors)."""

    value: str
    source: str


@dataclass(frozen=True, slots=True)
class JobName:
    """A job id as given: a bare id, or a resource name that also names project and region."""

    job_id: str
    project: str | None = None
    region: str | None = None

    @property
    def resource(self) -> str | None:
        """``projects/P/locations/L/customJobs/ID`` when project and region are known."""
        if self.project is None or self.region is None:
            return None
        return f"projects/{self.project}/locations/{self.region}/customJobs/{self.job_id}"


def parse_job_name(text: str) -> JobName:
    """A bare job id, or ``projects/P/locations/L/customJobs/ID`` (project and region with it).

    Raises :class:`~analyzer.core.errors.InputError` for another resource path.
    """
    name = text.strip()
    found = _RESOURCE.match(name)
    if found:
        return JobName(found["job"], found["project"], found["region"])
    if "/" in name:
        raise InputError(
            f"job id {text!r} is neither an id nor projects/P/locations/L/customJobs/ID"
        )
    return JobName(name)


def config_dir(environ: Mapping[str, str] | None = None) -> Path:
    """gcloud's configuration directory."""
    env = os.environ if environ is None else environ
    explicit = env.get("CLOUDSDK_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    if sys.platform == "win32" and env.get("APPDATA"):
        return Path(env["APPDATA"]) / "gcloud"
    return Path(env.get("HOME") or Path.home()) / ".config" / "gcloud"


def active_configuration(environ: Mapping[str, str] | None = None) -> tuple[str, Path]:
    """The active configuration's name and file (which may not exist)."""
    env = os.environ if environ is None else environ
    directory = config_dir(env)
    name = env.get("CLOUDSDK_ACTIVE_CONFIG_NAME", "").strip()
    if not name:
        try:
            name = (directory / "active_config").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            name = ""
    name = name or "default"
    return name, directory / "configurations" / f"config_{name}"


def _config_value(section: str, key: str, environ: Mapping[str, str] | None) -> Setting | None:
    name, path = active_configuration(environ)
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, configparser.Error):
        # No gcloud here, or a file gcloud itself would complain about: no default from it.
        return None
    value = parser.get(section, key, fallback="").strip()
    if not value:
        return None
    return Setting(value, f"gcloud configuration {name!r} ({section}/{key})")


def default_project(environ: Mapping[str, str] | None = None) -> Setting | None:
    """The project gcloud would use, or None."""
    env = os.environ if environ is None else environ
    for variable in ("CLOUDSDK_CORE_PROJECT", "GOOGLE_CLOUD_PROJECT"):
        value = env.get(variable, "").strip()
        if value:
            return Setting(value, variable)
    return _config_value("core", "project", env)


def default_region(environ: Mapping[str, str] | None = None) -> Setting:
    """The region of the Vertex AI API gcloud would use, else ``us-central1``."""
    env = os.environ if environ is None else environ
    value = env.get("CLOUDSDK_AI_REGION", "").strip()
    if value:
        return Setting(value, "CLOUDSDK_AI_REGION")
    return _config_value("ai", "region", env) or Setting(DEFAULT_REGION, "the default region")
