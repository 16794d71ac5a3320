"""Invoke a registered function's real handler in-process, as Lambda would run it.

Lambda gives each concurrent invocation an execution environment of its own (a process with
exactly its function's variables); here every invocation runs in the calling thread, inside an
execution environment of its own (``local.isolation``): ``os.environ`` holds exactly the
function's configured variables plus what the Lambda runtime itself sets and the emulator
endpoint, and Powertools' metric set and logger keys are its own. Invocations of the same or of
different functions run concurrently (the poller runs up to a mapping's maximum concurrency at
once). The handlers read their settings from the environment per invocation (handlers/
contract), which is what makes this faithful.
"""

from __future__ import annotations

import importlib
import io
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from idempotent_messaging.local.isolation import execution_environment
from idempotent_messaging.local.registry import FunctionConfig
from idempotent_messaging.local.server import emulator_environment

_IMPORT_LOCK = threading.Lock()  # sys.path is process state: one handler resolved at a time


class LambdaContext:
    """The context object of the Python Lambda runtime; remaining time honours the timeout."""

    def __init__(self, fn: FunctionConfig, region: str) -> None:
        self.function_name = fn.name
        self.function_version = "$LATEST"
        self.invoked_function_arn = fn.arn
        self.memory_limit_in_mb = fn.memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{fn.name}"
        self.log_stream_name = time.strftime("%Y/%m/%d/[$LATEST]") + uuid.uuid4().hex
        self.identity = None
        self.client_context = None
        self.tenant_id = None
        self._deadline = time.monotonic() + fn.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@dataclass
class InvocationResult:
    function_name: str
    request_id: str
    response: Any
    error: BaseException | None
    duration_s: float
    timed_out: bool

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


def resolve_handler(handler: str, code_root: str = "") -> Callable[[Any, Any], Any]:
    """Import `package.module.function` the way the Lambda Python runtime does.

    code_root is the directory the function's archive was built from: Lambda imports from the
    archive root, so it goes on sys.path.
    """
    module_name, _, attr = handler.rpartition(".")
    if not module_name:
        raise ValueError(f"handler {handler!r} is not of the form 'module.function'")
    with _IMPORT_LOCK:
        if code_root and code_root not in sys.path:
            sys.path.insert(0, code_root)
        module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"handler {handler!r}: module {module_name} has no {attr!r}") from None


def lambda_environment(fn: FunctionConfig, region: str, endpoint_url: str) -> dict[str, str]:
    """The function's variables plus those the Lambda runtime sets, pointed at the emulator."""
    return {
        **emulator_environment(endpoint_url, region),
        "AWS_LAMBDA_FUNCTION_NAME": fn.name,
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(fn.memory_mb),
        "AWS_LAMBDA_FUNCTION_TIMEOUT": str(fn.timeout_s),
        "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{fn.name}",
        "AWS_EXECUTION_ENV": f"AWS_Lambda_{fn.runtime}",
        "LAMBDA_TASK_ROOT": os.getcwd(),
        "_HANDLER": fn.handler,
        **fn.environment,
    }


def invoke(fn: FunctionConfig, event: Any, *, region: str, endpoint_url: str) -> InvocationResult:
    """Run the handler once. An exception (even a BaseException crash) is the invocation error.

    Lambda would kill an invocation at its timeout; in-process it cannot be interrupted, so an
    overrun is reported as timed out and its response discarded, as Lambda would. Safe to call
    from several threads at once: each call is an execution environment of its own.
    """
    with execution_environment(lambda_environment(fn, region, endpoint_url)):
        context = LambdaContext(fn, region)
        started = time.monotonic()
        response: Any = None
        error: BaseException | None = None
        try:
            response = resolve_handler(fn.handler, fn.code_root)(event, context)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # a simulated process death is a failed invocation
            error = exc
        duration = time.monotonic() - started
    timed_out = duration > fn.timeout_s
    return InvocationResult(
        function_name=fn.name,
        request_id=context.aws_request_id,
        response=None if timed_out else response,
        error=error,
        duration_s=duration,
        timed_out=timed_out,
    )


@contextmanager
def handler_output_to(path: Path | None) -> Iterator[TextIO]:
    """Send fd 1 (the handlers' Powertools logs and EMF metrics) to `path`; yield a stream
    on the original stdout for progress lines. None: no redirection (--verbose)."""
    if path is None:
        yield sys.stdout
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    saved = os.dup(1)
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.close(log)
    console = io.TextIOWrapper(os.fdopen(os.dup(saved), "wb"), line_buffering=True)
    try:
        yield console
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        console.close()
