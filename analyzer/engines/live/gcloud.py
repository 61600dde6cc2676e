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


# The shapes of the names an address or a Logging filter is built from (issue 31): a value of
# another shape, from a pasted resource name, a flag, the environment or gcloud's configuration,
# could aim the user's credentials at a host the input chose (`127.0.0.1:8080#` as a region).
REGION_SHAPE = re.compile(r"^[a-z]+(?:-[a-z0-9]+)+$")
# A project id is 6-30 lower-case letters, digits and hyphens, starting with a letter and not
# ending with a hyphen; a project number is digits.
PROJECT_SHAPE = re.compile(r"^(?:[a-z][a-z0-9-]{4,28}[a-z0-9]|[0-9]{1,20})$")
# A Vertex AI job id is a number; a legacy AI Platform job name is letters, digits, underscores.
JOB_ID_SHAPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
_SHAPES = {
    "region": (REGION_SHAPE, "a region such as us-central1"),
    "project": (PROJECT_SHAPE, "a project id (6-30 lower-case letters, digits, hyphens) or number"),
    "job id": (JOB_ID_SHAPE, "a job id (digits, or a legacy job's letters, digits, underscores)"),
}


def checked(kind: str, value: str, source: str) -> str:
    """``value`` when it has the shape of a ``kind`` (``region``, ``project``, ``job id``); else
    :class:`~analyzer.core.errors.InputError` naming the value (escaped) and where it came from."""
    shape, what = _SHAPES[kind]
    if shape.fullmatch(value):
        return value
    raise InputError(f"{kind} {value!r} from {source} is not {what}: nothing was sent")


def resolve_live_job(project: str | None, job_id: str | None, region: str | None) -> JobName:
    """The live job: its id, project and region, with gcloud's defaults filled in, each checked
    for its shape (:func:`checked`) before any address or filter is built from it."""
    if not job_id:
        raise InputError("live reading needs both --project and --job-id")
    name = parse_job_name(job_id)
    if project and name.project and project != name.project:
        raise InputError(
            f"--project {project!r} and the job's resource name (project {name.project!r}) disagree"
        )
    pasted = "the job's resource name"
    chosen = Setting(project, "--project") if project else None
    if chosen is None and name.project:
        chosen = Setting(name.project, pasted)
    chosen = chosen or default_project()
    if chosen is None:
        raise InputError(
            "live reading needs both --project and --job-id: give --project, set "
            "CLOUDSDK_CORE_PROJECT, or run `gcloud config set project PROJECT`"
        )
    where = Setting(region, "--region") if region else None
    if where is None and name.region:
        where = Setting(name.region, pasted)
    where = where or default_region()
    return JobName(
        checked("job id", name.job_id, "--job-id" if name.project is None else pasted),
        checked("project", chosen.value, chosen.source),
        checked("region", where.value, where.source),
    )


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
