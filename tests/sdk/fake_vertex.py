"""A loopback fake of the Vertex AI API that plays scripted jobs, for the real SDK to talk to.

The SDK (google-cloud-aiplatform) talks gRPC over TLS by default; so does this fake: a real
``grpc`` server on 127.0.0.1 with a self-signed certificate made at start. A driver process
trusts it through ``GRPC_DEFAULT_SSL_ROOTS_FILE_PATH`` (gRPC core's own setting for its root
certificates) and reaches it with ``aiplatform.init(api_endpoint=ENDPOINT,
credentials=AnonymousCredentials())``: the SDK's code and transport stay as users run them.

Each job is scripted by its display name (:class:`ScriptedJob`): the states its successive
reads return (the last one repeats), the error the job ends with, or a refusal of its creation.
One read advances the job one state, so a capture does not depend on timing.

    with FakeVertex(jobs) as fake:       # fake.endpoint, fake.environ() for the driver
        ...

Served: JobService Create/Get/Cancel of custom jobs and hyperparameter tuning jobs,
PipelineService Create/Get/Cancel of training pipelines (API v1, the SDK's default); any other
method is answered UNIMPLEMENTED and recorded in ``unserved``, so a capture that needed one
is seen to be wrong.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc

PROJECT_NUMBER = "734596161237"
LOCATION = "us-central1"
PARENT = f"projects/{PROJECT_NUMBER}/locations/{LOCATION}"


def job_id_for(name: str) -> str:
    """A stable numeric id like the platform's (19 digits) for a scripted display name."""
    digest = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big")
    return str(10**18 + digest % (9 * 10**18))


@dataclass(frozen=True)
class Trial:
    """One trial of a tuning job: its final Trial.State name and, if infeasible, why."""

    trial_id: str
    state: str
    infeasible_reason: str = ""


@dataclass(frozen=True)
class ScriptedJob:
    """What the fake plays for the job created with display name ``name``.

    ``kind`` is ``custom``, ``tuning`` or ``pipeline``. ``states`` are state names without
    their prefix (``QUEUED``, ``RUNNING``, ``SUCCEEDED``...), one per read; a job whose last
    state is not final runs for ever (an interrupted wait). ``error`` is the google.rpc.Status
    (code, message) the job holds once FAILED or CANCELLED. ``refuse`` answers the create call
    with that gRPC status and message instead (no job is made)."""

    name: str
    kind: str
    states: tuple[str, ...]
    error: tuple[int, str] | None = None
    refuse: tuple[grpc.StatusCode, str] | None = None
    trials: tuple[Trial, ...] = ()

    @property
    def job_id(self) -> str:
        return job_id_for(self.name)

    @property
    def backing_job_id(self) -> str:
        """A training pipeline's backing custom job."""
        return job_id_for(self.name + "/backing")

    @property
    def collection(self) -> str:
        return {
            "custom": "customJobs",
            "tuning": "hyperparameterTuningJobs",
            "pipeline": "trainingPipelines",
        }[self.kind]

    @property
    def resource_name(self) -> str:
        return f"{PARENT}/{self.collection}/{self.job_id}"

    @property
    def final_state(self) -> str:
        return self.states[-1]


@dataclass
class _Running:
    script: ScriptedJob
    resource: Any
    reads: int = 0


def _self_signed(directory: Path) -> tuple[bytes, bytes, Path]:
    """A key and certificate for 127.0.0.1 and localhost; the certificate's file."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path = directory / "fake-vertex.pem"
    path.write_bytes(cert_pem)
    return key_pem, cert_pem, path


class FakeVertex:
    """The fake API, serving ``jobs`` (scripted by display name) while in a ``with`` block."""

    def __init__(self, jobs: Sequence[ScriptedJob]) -> None:
        self.scripts = {job.name: job for job in jobs}
        self.unserved: list[str] = []
        self.calls: list[str] = []
        self._running: dict[str, _Running] = {}
        self._lock = threading.Lock()
        self._dir = tempfile.TemporaryDirectory(prefix="fake-vertex-")
        key_pem, cert_pem, self.cert_path = _self_signed(Path(self._dir.name))
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        self._server.add_generic_rpc_handlers((self._handlers(), _Unserved(self.unserved)))
        credentials = grpc.ssl_server_credentials([(key_pem, cert_pem)])
        port = self._server.add_secure_port("127.0.0.1:0", credentials)
        self.endpoint = f"127.0.0.1:{port}"

    def environ(self) -> dict[str, str]:
        """What a driver process needs in its environment to reach and trust this fake."""
        return {
            "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH": str(self.cert_path),
            "FAKE_VERTEX": self.endpoint,
        }

    def __enter__(self) -> FakeVertex:
        self._server.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._server.stop(grace=None)
        self._dir.cleanup()

    def reads(self, name: str) -> int:
        """How many times the job of display name ``name`` was read (0 before its creation)."""
        with self._lock:
            running = self._running.get(self.scripts[name].resource_name)
            return 0 if running is None else running.reads

    def last_served(self, name: str) -> str | None:
        """The state the fake last answered for that job (None: never created)."""
        with self._lock:
            running = self._running.get(self.scripts[name].resource_name)
            if running is None:
                return None
            states = running.script.states
            return states[min(max(running.reads - 1, 0), len(states) - 1)]

    # -- the services ------------------------------------------------------------------------

    def _handlers(self) -> grpc.GenericRpcHandler:
        from google.cloud.aiplatform_v1.types import (
            custom_job,
            hyperparameter_tuning_job,
            job_service,
            pipeline_service,
            training_pipeline,
        )
        from google.protobuf import empty_pb2

        def unary(
            request_type: Any, response_type: Any, method: Callable[[Any], Any]
        ) -> grpc.RpcMethodHandler:
            def serve(request: Any, context: grpc.ServicerContext) -> Any:
                try:
                    return method(request)
                except _Refused as refusal:
                    context.abort(refusal.status, refusal.message)

            return grpc.unary_unary_rpc_method_handler(
                serve,
                request_deserializer=request_type.deserialize,
                response_serializer=response_type.serialize
                if response_type is not empty_pb2.Empty
                else empty_pb2.Empty.SerializeToString,
            )

        empty = empty_pb2.Empty
        jobs = {
            "CreateCustomJob": unary(
                job_service.CreateCustomJobRequest,
                custom_job.CustomJob,
                lambda r: self._create("custom", r.custom_job),
            ),
            "GetCustomJob": unary(job_service.GetCustomJobRequest, custom_job.CustomJob, self._get),
            "CancelCustomJob": unary(job_service.CancelCustomJobRequest, empty, self._cancel),
            "CreateHyperparameterTuningJob": unary(
                job_service.CreateHyperparameterTuningJobRequest,
                hyperparameter_tuning_job.HyperparameterTuningJob,
                lambda r: self._create("tuning", r.hyperparameter_tuning_job),
            ),
            "GetHyperparameterTuningJob": unary(
                job_service.GetHyperparameterTuningJobRequest,
                hyperparameter_tuning_job.HyperparameterTuningJob,
                self._get,
            ),
            "CancelHyperparameterTuningJob": unary(
                job_service.CancelHyperparameterTuningJobRequest, empty, self._cancel
            ),
        }
        pipelines = {
            "CreateTrainingPipeline": unary(
                pipeline_service.CreateTrainingPipelineRequest,
                training_pipeline.TrainingPipeline,
                lambda r: self._create("pipeline", r.training_pipeline),
            ),
            "GetTrainingPipeline": unary(
                pipeline_service.GetTrainingPipelineRequest,
                training_pipeline.TrainingPipeline,
                self._get,
            ),
            "CancelTrainingPipeline": unary(
                pipeline_service.CancelTrainingPipelineRequest, empty, self._cancel
            ),
        }
        handlers = {
            f"/google.cloud.aiplatform.v1.JobService/{name}": handler
            for name, handler in jobs.items()
        }
        handlers.update(
            (f"/google.cloud.aiplatform.v1.PipelineService/{name}", handler)
            for name, handler in pipelines.items()
        )
        return _ByPath(handlers)

    def _create(self, kind: str, resource: Any) -> Any:
        script = self.scripts.get(resource.display_name)
        self.calls.append(f"create {kind} {resource.display_name}")
        if script is None:
            raise _Refused(
                grpc.StatusCode.INVALID_ARGUMENT, f"no scripted job named {resource.display_name!r}"
            )
        if script.refuse is not None:
            raise _Refused(*script.refuse)
        resource.name = script.resource_name
        resource.create_time = datetime.datetime.now(datetime.UTC)
        running = _Running(script, resource)
        with self._lock:
            self._running[script.resource_name] = running
        return self._advance(running, read=False)

    def _get(self, request: Any) -> Any:
        self.calls.append(f"get {request.name}")
        with self._lock:
            running = self._running.get(request.name)
        if running is None:
            raise _Refused(grpc.StatusCode.NOT_FOUND, f"{request.name} not found")
        return self._advance(running, read=True)

    def _cancel(self, request: Any) -> Any:
        from google.protobuf import empty_pb2

        self.calls.append(f"cancel {request.name}")
        return empty_pb2.Empty()

    def _advance(self, running: _Running, *, read: bool) -> Any:
        """The resource at the job's next scripted state (creation shows the first)."""
        script = running.script
        with self._lock:
            index = min(running.reads, len(script.states) - 1)
            if read:
                running.reads += 1
        state = script.states[index]
        resource = type(running.resource)(running.resource)
        prefix = "PIPELINE_STATE_" if script.kind == "pipeline" else "JOB_STATE_"
        resource.state = prefix + state
        if state in ("RUNNING", "SUCCEEDED", "FAILED", "CANCELLING", "CANCELLED"):
            resource.start_time = resource.create_time
        final = index == len(script.states) - 1 and state in ("SUCCEEDED", "FAILED", "CANCELLED")
        if final:
            resource.end_time = datetime.datetime.now(datetime.UTC)
            if script.error is not None:
                resource.error.code, resource.error.message = script.error
        if script.kind == "pipeline" and state != "QUEUED" and state != "PENDING":
            # The service names the pipeline's backing custom job in the task metadata
            # (the SDK prints it as "View backing custom job:").
            resource.training_task_metadata = {
                "backingCustomJob": f"{PARENT}/customJobs/{script.backing_job_id}"
            }
        if script.kind == "tuning" and state != "QUEUED" and state != "PENDING":
            resource.trials = _trials(script, final)
        return resource


def _trials(script: ScriptedJob, final: bool) -> list[Any]:
    from google.cloud.aiplatform_v1.types import study

    trials = []
    for trial in script.trials:
        shown = study.Trial(id=trial.trial_id, state="ACTIVE")
        if final:
            shown.state = trial.state
            shown.infeasible_reason = trial.infeasible_reason
        trials.append(shown)
    return trials


class _Refused(Exception):
    def __init__(self, status: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _ByPath(grpc.GenericRpcHandler):
    def __init__(self, handlers: dict[str, grpc.RpcMethodHandler]) -> None:
        self._handlers = handlers

    def service(
        self, handler_call_details: grpc.HandlerCallDetails
    ) -> grpc.RpcMethodHandler | None:
        return self._handlers.get(handler_call_details.method)  # type: ignore[attr-defined]


@dataclass
class _Unserved(grpc.GenericRpcHandler):
    """Records a method the fake does not serve (gRPC then answers UNIMPLEMENTED)."""

    seen: list[str] = field(default_factory=list)

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> None:
        self.seen.append(handler_call_details.method)  # type: ignore[attr-defined]
        return None
