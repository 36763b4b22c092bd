"""Runs a template's Lambda functions as Lambda would: each concurrent instance of a function is a process of
its own (`herald_dev.lambda_instance`: its own imports, module state and environment, like a Lambda execution
environment) serving one invocation at a time. An invocation that runs past the function's `Timeout` is killed
with its process and reported as failed, so the event source retries it as Lambda's would.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import select
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from herald_ops.template import ACCOUNT_ID, StackTemplate

log = logging.getLogger("local-cloud")

# Linux sends an instance its parent-death signal when the *thread* that started it ends, so every instance
# is started from this one thread, which lives as long as the local cloud (pollers' threads come and go).
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lambda-spawner")
# Lambda gives init 10 s of its own; locally a cold start competes with every other function's for two
# cores, so it gets more. Init time never counts against the invocation's Timeout.
INIT_TIMEOUT_S = 30.0


class FunctionError(Exception):
    """The invocation failed the way Lambda reports a function error (exception, timeout, crash)."""


@dataclass
class Instance:
    """One execution environment: a process and the two pipes to it."""

    process: subprocess.Popen[bytes]
    requests: IO[str]
    answers: IO[str]

    def answer(self, timeout_s: float) -> dict[str, Any] | None:
        """The next answer line, or None when none came in time or the process is gone."""
        ready, _, _ = select.select([self.answers], [], [], max(0.0, timeout_s))
        if not ready:
            return None
        line = self.answers.readline()
        return json.loads(line) if line else None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        self.process.wait()
        for pipe in (self.requests, self.answers):
            with contextlib.suppress(OSError):
                pipe.close()


DEFAULT_INSTANCES = 4  # a function's instances on one machine when nothing in the template says more


def _concurrency(stack: StackTemplate, props: dict[str, Any]) -> int:
    """How many instances of a function may run at once: its reserved concurrency when it has one, else as many
    as its SQS mappings may invoke together (each mapping's `ScalingConfig.MaximumConcurrency`, which Lambda honours
    for that mapping alone), at least DEFAULT_INSTANCES."""
    reserved = props.get("ReservedConcurrentExecutions")
    if reserved is not None:
        return int(stack.resolve(reserved)) or 1
    mappings = [stack.resolve(event.get("Properties", {})) for event in props.get("Events", {}).values()]
    scaling = [int(m.get("ScalingConfig", {}).get("MaximumConcurrency", 0)) for m in mappings if isinstance(m, dict)]
    return max(DEFAULT_INSTANCES, sum(scaling))


@dataclass
class LocalFunction:
    logical_id: str
    name: str
    code_dir: Path
    handler: str
    timeout_s: float
    memory_mb: int
    region: str
    properties: dict[str, Any]
    max_instances: int = DEFAULT_INSTANCES
    environment: dict[str, str] = field(default_factory=dict)  # the whole environment of its processes
    _idle: queue.LifoQueue[Instance] = field(default_factory=queue.LifoQueue)
    _instances: list[Instance] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _slots: threading.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self._slots = threading.Semaphore(self.max_instances)

    @classmethod
    def from_template(cls, stack: StackTemplate, logical_id: str, template_dir: Path) -> LocalFunction:
        props = stack.function_properties(logical_id)
        return cls(
            logical_id=logical_id,
            name=stack.physical_name(logical_id),
            code_dir=(template_dir / str(stack.resolve(props["CodeUri"]))).resolve(),
            handler=str(props["Handler"]),
            timeout_s=float(stack.resolve(props.get("Timeout", 3))),
            memory_mb=int(stack.resolve(props.get("MemorySize", 128))),
            region=stack.region,
            properties=props,
            max_instances=_concurrency(stack, props),
        )

    def template_environment(self, stack: StackTemplate) -> dict[str, str]:
        variables = self.properties.get("Environment", {}).get("Variables", {})
        return {key: str(value) for key, value in stack.resolve(variables).items()}

    def _start_instance(self) -> Instance:
        requests_read, requests_write = os.pipe()
        answers_read, answers_write = os.pipe()
        command = [
            sys.executable,
            "-m",
            "herald_dev.lambda_instance",
            "invoke",
            str(self.code_dir),
            self.handler,
            str(requests_read),
            str(answers_write),
        ]
        environment = {**self.environment, "HERALD_LOCAL_PARENT_PID": str(os.getpid())}
        # A session of its own: a terminal's Ctrl-C reaches the local cloud, which stops it (no traceback from
        # each instance); it dies with the cloud in any case (lambda_instance's parent-death signal).
        spawn = _SPAWNER.submit(
            subprocess.Popen,
            command,
            env=environment,
            pass_fds=(requests_read, answers_write),
            start_new_session=True,
        )
        process: subprocess.Popen[bytes] = spawn.result()
        os.close(requests_read)
        os.close(answers_write)
        instance = Instance(process, os.fdopen(requests_write, "w"), os.fdopen(answers_read, "r"))
        init = instance.answer(INIT_TIMEOUT_S)
        if init is None or not init.get("ready"):
            instance.kill()
            why = f"{init['error']}: {init['message']}" if init else f"init did not finish in {INIT_TIMEOUT_S:.0f} s"
            raise FunctionError(why)
        with self._lock:
            self._instances.append(instance)
        return instance

    def invoke(self, event: dict[str, Any]) -> Any:
        """Invoke synchronously; raises FunctionError on an exception, a timeout or a crash."""
        with self._slots:
            try:
                instance = self._idle.get_nowait()
            except queue.Empty:
                instance = self._start_instance()
            request = {
                "event": event,
                "function_name": self.name,
                "function_arn": f"arn:aws:lambda:{self.region}:{ACCOUNT_ID}:function:{self.name}",
                "memory_mb": self.memory_mb,
                "timeout_s": self.timeout_s,
                "id": str(uuid.uuid4()),
            }
            started = time.monotonic()
            try:
                instance.requests.write(json.dumps(request) + "\n")
                instance.requests.flush()
                answer = instance.answer(self.timeout_s)
            except (OSError, ValueError):
                answer = None
            if answer is None:
                self._discard(instance)
                elapsed = time.monotonic() - started
                if elapsed >= self.timeout_s:
                    log.warning("%s timed out after %.2f s; its instance was killed", self.logical_id, elapsed)
                    raise FunctionError(f"Task timed out after {elapsed:.2f} seconds")
                raise FunctionError("Runtime exited without an answer")
            self._idle.put(instance)
            if "error" in answer:
                log.warning("%s failed: %s: %s", self.logical_id, answer["error"], answer["message"])
                raise FunctionError(f"{answer['error']}: {answer['message']}")
            return answer["result"]

    def _discard(self, instance: Instance) -> None:
        instance.kill()
        with self._lock:
            self._instances.remove(instance)

    def stop(self) -> None:
        """End every instance (the local cloud is stopping)."""
        with self._lock:
            instances, self._instances = self._instances, []
        for instance in instances:
            instance.kill()
