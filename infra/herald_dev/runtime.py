"""Runs a template's Lambda functions in this process, as Lambda would invoke them.

Each concurrent *instance* of a function is its own import of the function's module (its own module-level
state, like a separate Lambda container); an instance serves one invocation at a time. A function that
runs past its `Timeout` is reported as failed, as Lambda would after killing it.
"""

from __future__ import annotations

import importlib.util
import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from herald_dev.template import ACCOUNT_ID, LocalStack

log = logging.getLogger("local-cloud")


class FunctionError(Exception):
    """The invocation failed the way Lambda reports a function error (exception or timeout)."""


@dataclass
class LocalContext:
    function_name: str
    memory_limit_in_mb: int
    timeout_s: float
    region: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    _started: float = field(default_factory=time.monotonic)

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{ACCOUNT_ID}:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return "local"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.timeout_s - (time.monotonic() - self._started)) * 1000))


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
    max_instances: int = 4
    _idle: queue.LifoQueue[Callable[..., Any]] = field(default_factory=queue.LifoQueue)
    _created: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _slots: threading.Semaphore = field(init=False)

    def __post_init__(self) -> None:
        self._slots = threading.Semaphore(self.max_instances)

    @classmethod
    def from_template(cls, stack: LocalStack, logical_id: str, template_dir: Path) -> LocalFunction:
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
            max_instances=int(stack.resolve(props.get("ReservedConcurrentExecutions", 4))) or 1,
        )

    def environment(self, stack: LocalStack) -> dict[str, str]:
        variables = self.properties.get("Environment", {}).get("Variables", {})
        return {key: str(value) for key, value in stack.resolve(variables).items()}

    def load_module(self) -> ModuleType:
        """A fresh import of the handler's module (a new 'container')."""
        module_file = self.handler.rpartition(".")[0]
        path = self.code_dir / f"{module_file.replace('.', '/')}.py"
        with self._lock:
            self._created += 1
            module_name = f"herald_fn_{self.logical_id}_{self._created}"
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise FunctionError(f"cannot load {path}")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def _new_instance(self) -> Callable[..., Any]:
        return getattr(self.load_module(), self.handler.rpartition(".")[2])  # type: ignore[no-any-return]

    def invoke(self, event: dict[str, Any]) -> Any:
        """Invoke synchronously; raises FunctionError on an exception or a timeout."""
        with self._slots:
            try:
                handler = self._idle.get_nowait()
            except queue.Empty:
                handler = self._new_instance()
            context = LocalContext(self.name, self.memory_mb, self.timeout_s, self.region)
            started = time.monotonic()
            try:
                result = handler(event, context)
            except Exception as exc:
                log.warning("%s failed: %s: %s", self.logical_id, type(exc).__name__, exc)
                raise FunctionError(f"{type(exc).__name__}: {exc}") from exc
            finally:
                self._idle.put(handler)
            elapsed = time.monotonic() - started
            if elapsed > self.timeout_s:
                raise FunctionError(f"Task timed out after {elapsed:.2f} seconds")
            return result
