"""One Lambda execution environment: a process of its own that imports one function's handler once and serves
its invocations one at a time, as Lambda's runtime does.

The local cloud (`herald_dev.runtime`) starts it with the function's own environment and talks to it over two
pipes: first a line saying init is done (`{"ready": true}`, or the import's error), then one invocation per
line in (`{"event": ..., "timeout_s": ...}`) and one answer per line out (`{"result": ...}` or
`{"error": ..., "message": ...}`). It kills the process when an invocation outlives the
function's Timeout. Logs go to the inherited stdout and stderr. The process dies with the local cloud that
started it (Linux's parent-death signal), as a Lambda environment does not outlive its service.

`python -m herald_dev.lambda_instance http CODE_DIR HANDLER_MODULE HOST PORT` serves the HTTP function's ASGI
app instead, in the same kind of process (its own imports and environment).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import signal
import sys
import time
import warnings
from typing import Any

from herald_dev.meter import FUNCTION_MEMORY_VARIABLE, FUNCTION_NAME_VARIABLE, ProcessMeter, process_meter
from herald_dev.write_signal import tell_writes_from_this_process

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when its parent dies (a SIGKILLed local cloud takes its functions with it)."""
    with contextlib.suppress(OSError):  # not Linux: the closed pipes still end the process
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)


class InstanceContext:
    """The Lambda context object, counting down from the moment the invocation arrived."""

    def __init__(
        self, function_name: str, function_arn: str, memory_mb: int, timeout_s: float, request_id: str
    ) -> None:
        self.function_name = function_name
        self.memory_limit_in_mb = memory_mb
        self.function_version = "$LATEST"
        self.invoked_function_arn = function_arn
        self.aws_request_id = request_id
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = f"local/{os.getpid()}"
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def serve_invocations(code_dir: str, handler: str, requests_fd: int, answers_fd: int) -> None:
    """Init (import the handler), say so on the first answer line, then one answer per invocation."""
    sys.path.insert(0, code_dir)
    module_name, _, attribute = handler.rpartition(".")
    with os.fdopen(requests_fd, "r") as requests, os.fdopen(answers_fd, "w") as answers:

        def answer(message: dict[str, Any]) -> None:
            answers.write(json.dumps(message, default=str) + "\n")
            answers.flush()

        meter = process_meter()  # before the import: the handler's clients are made with its hooks
        try:
            handle = getattr(importlib.import_module(module_name), attribute)
        except Exception as exc:
            answer({"error": "Runtime.ImportModuleError", "message": f"{type(exc).__name__}: {exc}"})
            return
        answer({"ready": True})
        for line in requests:
            request = json.loads(line)
            context = InstanceContext(
                request["function_name"],
                request["function_arn"],
                request["memory_mb"],
                request["timeout_s"],
                request["id"],
            )
            started = time.monotonic()
            try:
                result: dict[str, Any] = {"result": handle(request["event"], context)}
            except Exception as exc:
                result = {"error": type(exc).__name__, "message": str(exc)}
            if meter is not None:
                meter.invoked(request["function_name"], request["memory_mb"], time.monotonic() - started)
                meter.flush()
            answer(result)


def serve_http(code_dir: str, module_name: str, host: str, port: int) -> None:
    import uvicorn

    sys.path.insert(0, code_dir)
    meter = process_meter()
    app = importlib.import_module(module_name).app
    if meter is not None:
        app = MeteredHttp(app, meter)
    uvicorn.run(app, host=host, port=port, log_level="warning")


class MeteredHttp:
    """The HTTP function's app, each request counted as API Gateway and Lambda bill it: one HTTP API request and
    one invocation of the function, for as long as the app takes to answer."""

    def __init__(self, app: Any, meter: ProcessMeter) -> None:
        self._app = app
        self._meter = meter
        self._function = os.environ.get(FUNCTION_NAME_VARIABLE, "HttpApiFunction")
        self._memory_mb = int(os.environ.get(FUNCTION_MEMORY_VARIABLE, "128"))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = time.monotonic()
        try:
            await self._app(scope, receive, send)
        finally:
            self._meter.count("apigateway.http_requests")
            self._meter.invoked(self._function, self._memory_mb, time.monotonic() - started)
            self._meter.flush()


def main(argv: list[str]) -> None:
    die_with_parent(int(os.environ.pop("HERALD_LOCAL_PARENT_PID", os.getppid())))
    # An invocation with nothing to count is normal here; Powertools would say so on every one of them.
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    tell_writes_from_this_process()  # before the handler's import: its clients are made with the hook
    if argv[1] == "http":
        serve_http(argv[2], argv[3], argv[4], int(argv[5]))
    else:
        serve_invocations(argv[2], argv[3], int(argv[4]), int(argv[5]))


if __name__ == "__main__":
    main(sys.argv)
