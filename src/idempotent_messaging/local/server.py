"""Start moto's server on 127.0.0.1 as the embedded "default AWS" of the demo, tests and benchmarks.

    with start_emulator() as emu:
        boto3.client("sqs", endpoint_url=emu.endpoint_url)

The process environment is pointed at the emulator (fake credentials, a region,
AWS_ENDPOINT_URL) while it runs, so every boto3 client created afterwards, Powertools' too,
talks to it and never to real AWS; stop() restores the previous values.
"""

from __future__ import annotations

import logging
import os
import urllib.request
from dataclasses import dataclass, field
from typing import Any

import boto3
from botocore.config import Config
from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.server import ThreadedMotoServer
from werkzeug.serving import make_server

from idempotent_messaging import ast_guard
from idempotent_messaging.local import moto_patches

DEFAULT_REGION = "ap-northeast-1"
# moto's fixed account id: ARNs the emulator returns carry it.
EMULATOR_ACCOUNT_ID = "123456789012"

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_SECURITY_TOKEN": "testing",
}


class _FastStopMotoServer(ThreadedMotoServer):
    """ThreadedMotoServer whose serve loop polls for shutdown every 50 ms instead of 500 ms,
    so stopping an emulator (once per test) does not cost half a second."""

    def _server_entry(self) -> None:
        app = DomainDispatcherApplication(create_backend_app)
        self._server = make_server(
            self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
        )
        self._server_ready_event.set()
        self._server.serve_forever(poll_interval=0.05)


@dataclass
class Emulator:
    """A running moto server. Use as a context manager or call stop()."""

    endpoint_url: str
    region: str
    _server: ThreadedMotoServer | None = field(repr=False, default=None)
    _saved_env: dict[str, str | None] = field(repr=False, default_factory=dict)

    def client(self, service: str, **config: Any) -> Any:
        """A boto3 client bound to the emulator (fake credentials, the emulator's region)."""
        return emulator_client(service, self.endpoint_url, self.region, **config)

    def reset(self) -> None:
        """Drop every resource in the emulator (moto's reset API)."""
        request = urllib.request.Request(f"{self.endpoint_url}/moto-api/reset", method="POST")
        with urllib.request.urlopen(request, timeout=10):
            pass

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env = {}

    def __enter__(self) -> Emulator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def emulator_client(service: str, endpoint_url: str, region: str, **config: Any) -> Any:
    """A boto3 client for `service` at `endpoint_url`, with the fake credentials: explicit
    arguments, so it works whatever the process environment says (an attached session)."""
    return boto3.client(
        service,
        endpoint_url=endpoint_url,
        region_name=region,
        aws_access_key_id=FAKE_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=FAKE_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=FAKE_CREDENTIALS["AWS_SESSION_TOKEN"],
        config=Config(**config) if config else None,
    )


def queue_url_from_arn(arn: str, endpoint_url: str) -> str:
    """moto's queue URL for an ARN `arn:aws:sqs:<region>:<account>:<name>`."""
    parts = arn.split(":")
    if len(parts) != 6 or parts[2] != "sqs":
        raise ValueError(f"not an SQS queue ARN: {arn!r}")
    return f"{endpoint_url.rstrip('/')}/{parts[4]}/{parts[5]}"


def emulator_environment(endpoint_url: str, region: str = DEFAULT_REGION) -> dict[str, str]:
    """The variables that point boto3 (and the AWS CLI) at the emulator with fake credentials."""
    return {
        **FAKE_CREDENTIALS,
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
        "AWS_ENDPOINT_URL": endpoint_url,
    }


def start_emulator(
    region: str = DEFAULT_REGION, *, port: int = 0, set_env: bool = True
) -> Emulator:
    """Start moto's threaded server on 127.0.0.1 (port 0: the OS picks a free one).

    set_env points this process's environment at it until stop(). The werkzeug request log
    (one line per call, and a traceback for each action moto has not implemented, which
    callers detect and handle) is silenced.
    """
    logging.getLogger("werkzeug").setLevel(logging.CRITICAL)
    moto_patches.install()  # the runtime's PartiQL status write (see moto_patches.py)
    ast_guard.install()  # its request threads format tracebacks (see ast_guard.py)
    server = _FastStopMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    host, bound_port = server.get_host_and_port()
    emulator = Emulator(endpoint_url=f"http://{host}:{bound_port}", region=region, _server=server)
    # moto's backends are process-global: a new emulator starts empty, whatever ran before.
    emulator.reset()
    if set_env:
        env = emulator_environment(emulator.endpoint_url, region)
        emulator._saved_env = {key: os.environ.get(key) for key in env}
        os.environ.update(env)
        # A developer's profile must not leak real credentials into emulator calls.
        emulator._saved_env["AWS_PROFILE"] = os.environ.pop("AWS_PROFILE", None)
    return emulator
