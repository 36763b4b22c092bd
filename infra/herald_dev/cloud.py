"""The local cloud: Herald's whole stack on one machine, built from template.yaml.

An embedded moto server (or endpoints you name: DynamoDB Local, real AWS) holds the tables and queues the
template declares; the HTTP function's FastAPI app and an API Gateway WebSocket emulation are served on
localhost; event source mappings (DynamoDB Streams, SQS) and schedules invoke the template's functions
with Lambda's event shapes and batch semantics.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import uvicorn
from herald_ops.local_files import write_private
from herald_ops.template import StackTemplate

from herald.auth.models import OWNER_CAPABILITY
from herald_client import ServiceClient
from herald_dev import moto_patches
from herald_dev.already_running import owns
from herald_dev.config import LocalCloudConfig
from herald_dev.engine import ReferenceEngine
from herald_dev.fakes import Fakes, Providers, start_fakes
from herald_dev.group_owner import SampleGroupOwner
from herald_dev.make_signals import watch_make
from herald_dev.meter import meter_the_cloud, metered_as
from herald_dev.persistence import SavedState
from herald_dev.provision import provision
from herald_dev.runtime import LocalFunction
from herald_dev.template_wiring import EventSource, TemplateWiring, local_functions
from herald_dev.websocket_gateway import MESSAGE_LIMIT_BYTES
from herald_dev.write_signal import WriteListener, tell_writes_from_this_process

log = logging.getLogger("local-cloud")


def write_state(path: Path, state: dict[str, Any]) -> None:
    """Write a state file whole or not at all: others wait for it to exist and then read it, so it appears by
    a rename, never as an empty or half-written file; it is its owner's alone (write_private)."""
    write_private(path, json.dumps(state, indent=2))


class _Server(uvicorn.Server):
    """uvicorn without its own signal handling: the local cloud owns Ctrl-C for every part."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def store_secrets(ssm: Any, stack: StackTemplate, secrets: dict[str, str]) -> None:
    """`--secret PARAMETER=VALUE`: the SSM SecureString the template parameter names, as in AWS; a PARAMETER
    that starts with `/` is the SecureString's own name (a tenant's secret). The value is never logged."""
    for parameter, value in secrets.items():
        named = parameter if parameter.startswith("/") else str(stack.parameter(parameter))
        name = "/" + named.lstrip("/")
        ssm.put_parameter(Name=name, Value=value, Type="SecureString", Overwrite=True)
        log.info("stored %s as the SecureString %s", parameter, name)


class LocalCloud:
    def __init__(self, config: LocalCloudConfig) -> None:
        self.config = config
        self.stack = StackTemplate.from_file(
            config.template_path,
            stack_name=config.stack_name,
            region=config.region,
            parameter_overrides={"Stage": "local", **config.parameter_overrides},
        )
        self.functions: dict[str, LocalFunction] = {}
        self.sources: list[EventSource] = []
        self.stop_event = threading.Event()
        self._servers: list[_Server] = []
        self._moto: Any = None
        self._told_writes: WriteListener | None = None  # DynamoDB elsewhere: the functions tell their writes
        self.fakes: Fakes | None = None
        self.providers: Providers | None = config.providers
        self.engine: ReferenceEngine | None = None
        self._engine_key: str | None = None
        self.sample_owner: SampleGroupOwner | None = None
        self._http_process: subprocess.Popen[bytes] | None = None
        self._restored = False
        self._prepared = False  # provisioned (and loaded): only then is the state worth saving

    # ------------------------------------------------------------------ endpoints
    @property
    def aws_endpoint(self) -> str:
        return self.config.aws_endpoint or f"http://{self.config.host}:{self.config.moto_port}"

    @property
    def http_url(self) -> str:
        return f"http://{self.config.host}:{self.config.http_port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.config.host}:{self.config.ws_port}"

    def _start_aws(self) -> None:
        if self.config.aws_endpoint is None:
            from moto.server import ThreadedMotoServer

            moto_patches.install()
            self._moto = ThreadedMotoServer(ip_address=self.config.host, port=self.config.moto_port, verbose=False)
            self._moto.start()
            logging.getLogger("werkzeug").setLevel(logging.WARNING)
            log.info("embedded moto server on %s", self.aws_endpoint)
        env = {
            "AWS_ENDPOINT_URL": self.aws_endpoint,
            "AWS_DEFAULT_REGION": self.config.region,
            "AWS_REGION": self.config.region,
            "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "local"),
            "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "local"),
        }
        if not self.config.embeds_dynamodb:
            self._told_writes = WriteListener()
            env.update(self._told_writes.environment)
        if self.config.dynamodb_endpoint:
            env["AWS_ENDPOINT_URL_DYNAMODB"] = env["AWS_ENDPOINT_URL_DYNAMODB_STREAMS"] = self.config.dynamodb_endpoint
            log.info("DynamoDB at %s", self.config.dynamodb_endpoint)
        if self.config.sqs_endpoint:
            env["AWS_ENDPOINT_URL_SQS"] = self.config.sqs_endpoint
            log.info("SQS at %s", self.config.sqs_endpoint)
        os.environ.update(env)
        tell_writes_from_this_process()  # the cloud's own writes (TTL sweeps, loaded state) wake its readers too

    def client(self, service: str) -> Any:
        return boto3.client(service, region_name=self.config.region)  # type: ignore[call-overload]

    # ------------------------------------------------------------------ wiring from the template
    def _wiring(self) -> TemplateWiring:
        return TemplateWiring(
            self.stack,
            self.functions,
            self.client,
            restored=self._restored,
            sqs_wait_seconds=self.config.sqs_wait_seconds,
            rates=self.config.environment,
            dynamodb_writes=self._told_writes.signal if self._told_writes else moto_patches.DYNAMODB_WRITES,
        )

    # ------------------------------------------------------------------ run
    def prepare(self) -> None:
        self._start_aws()
        if self.providers is None:
            self.fakes = start_fakes(self.config.tencent_im_port, self.config.feishu_port)
            self.providers = self.fakes.providers
            log.info("fake Tencent IM on %s (messages: %s/)", self.fakes.tencent_im.url, self.fakes.tencent_im.url)
            log.info("fake Feishu on %s (cards: %s/)", self.fakes.feishu.url, self.fakes.feishu.url)
        provision(self.stack, self.client("dynamodb"), self.client("sqs"))
        self._load_saved_state()
        store_secrets(self.client("ssm"), self.stack, self.config.secrets)
        self.functions.update(local_functions(self.stack, self.config, self.providers))
        wiring = self._wiring()
        self.sources.extend([*wiring.event_sources(), *wiring.ttl_sweepers(self.config.ttl_sweep_seconds)])
        self._wire_engine()
        self._wire_sample_owner()
        self._prepared = True

    def _saved_state(self) -> SavedState | None:
        """The state kept between runs: the embedded AWS's only (another engine keeps its own)."""
        elsewhere = self.config.dynamodb_endpoint or self.config.sqs_endpoint
        if self.config.data_dir is None or self._moto is None or elsewhere:
            return None
        return SavedState(self.config.data_dir)

    def _tables_and_queues(self) -> tuple[dict[str, str], dict[str, str]]:
        tables = {logical: self.stack.physical_name(logical) for logical in self.stack.of_type("AWS::DynamoDB::Table")}
        queues = {
            logical: self.stack.attributes[logical]["QueueUrl"] for logical in self.stack.of_type("AWS::SQS::Queue")
        }
        return tables, queues

    def _load_saved_state(self) -> None:
        saved = self._saved_state()
        if saved is None:
            log.info("state: kept by %s, not by the local cloud", self.config.dynamodb_endpoint or self.aws_endpoint)
        elif self.config.fresh or not saved.exists():
            why = "--fresh" if self.config.fresh else "nothing saved yet"
            log.info("state: starting empty (%s); kept in %s when it stops", why, saved.directory)
        else:
            tables, queues = self._tables_and_queues()
            summary = saved.load(tables, queues, self.client, self.fakes)
            self._restored = True
            log.info("state: restored from %s (%s); `make dev FRESH=1` starts empty", saved.directory, summary)

    def _save_state(self) -> None:
        saved = self._saved_state()
        if saved is None:
            return
        tables, urls = self._tables_and_queues()
        names = {logical: self.stack.attributes[logical]["QueueName"] for logical in urls}
        owner = self.sample_owner.saved() if self.sample_owner is not None else None
        summary = saved.save(tables, names, self.config.region, self.client, self.fakes, owner)
        log.info("saved the state in %s (%s)", saved.directory, summary)

    def _service_key(self, service_id: str, capability: str) -> str:
        from herald.auth.dynamo import DynamoServiceKeyStore
        from herald.auth.service_keys import ServiceKeys

        keys = ServiceKeys(DynamoServiceKeyStore(self.stack.physical_name("ServiceKeysTable"), self.client("dynamodb")))
        key, _ = keys.create_key(service_id, [capability])
        return key

    def _wire_sample_owner(self) -> None:
        """The sample owner service, registered with a key of its own as any team's service would be."""
        if self.config.sample_owner_port < 0 or "OwnersTable" not in self.stack.attributes:
            return
        key = self._service_key("sample-groups", OWNER_CAPABILITY)
        self.sample_owner = SampleGroupOwner(
            ServiceClient(self.http_url, key, retries=1), self.config.host, self.config.sample_owner_port
        )
        if self._restored and (saved := self._saved_state()) is not None:  # its requests and members, kept too
            self.sample_owner.restore(saved.sample_owner())
        self.sources.append(self.sample_owner)
        log.info("sample owner service (join group approvals) on %s", self.sample_owner.url)

    def _wire_engine(self) -> None:
        """The reference agent engine, with a service key of its own, when the template has a turn queue."""
        if self.config.engine_turn_seconds <= 0 or "TurnsQueue" not in self.stack.attributes:
            return
        self._engine_key = self._service_key("reference-engine", "/internal/v1/sessions")
        turns_queue, seconds = self.stack.attributes["TurnsQueue"]["QueueUrl"], self.config.engine_turn_seconds
        self.engine = ReferenceEngine(self.client("sqs"), turns_queue, self.http_url, self._engine_key, seconds)
        self.sources.append(self.engine)

    def _settings_environment(self) -> dict[str, str]:
        """The Herald settings the functions run with (template Globals, so any function's), less secrets:
        what `herald keys|events|confirms` build their services from."""
        from herald.settings import PREFIX, secret_variables

        environment = next(iter(self.functions.values())).environment if self.functions else {}
        hidden = secret_variables()
        return {k: v for k, v in environment.items() if k.startswith(PREFIX) and k not in hidden}

    def _write_state(self) -> None:
        if self.config.state_file is None:
            return
        state = {
            "stack_name": self.config.stack_name,
            "region": self.config.region,
            "aws_endpoint": self.aws_endpoint,
            "dynamodb_endpoint": self.config.dynamodb_endpoint,
            "sqs_endpoint": self.config.sqs_endpoint,
            "http_url": self.http_url,
            "ws_url": self.ws_url,
            "resources": self.stack.attributes,
            "settings": self._settings_environment(),
            "fakes": self.providers.urls if self.providers else {},
            "sample_owner": self.sample_owner.url if self.sample_owner else None,
            "console": self.console_url,
            "pid": os.getpid(),
        }
        write_state(self.config.state_file, state)

    async def serve(self) -> None:
        servers = []
        http_function = self._wiring().http_function()
        if http_function is not None:
            self._http_process = self._start_http(http_function)
        gateway = self._wiring().websocket_gateway()
        if gateway is not None:
            servers.append(
                uvicorn.Config(
                    gateway.asgi(),
                    host=self.config.host,
                    port=self.config.ws_port,
                    log_level="warning",
                    ws="websockets-sansio",
                    ws_max_size=MESSAGE_LIMIT_BYTES,  # API Gateway's message quota: over it, 1009
                )
            )
        if self.config.console_port >= 0 and self.config.state_file is not None:
            servers.append(self._console_config(self.config.state_file))
        self._servers = [_Server(config) for config in servers]
        for source in self.sources:
            source.start(self.stop_event)
        tasks = [asyncio.create_task(server.serve()) for server in self._servers]
        while not all(server.started for server in self._servers) and not any(task.done() for task in tasks):
            await asyncio.sleep(0.05)
        if self._http_process is not None:
            await asyncio.to_thread(self._wait_for_http, self._http_process)
        self._write_state()
        log.info("ready: HTTP API on %s, WebSocket API on %s", self.http_url, self.ws_url)
        stopper = asyncio.create_task(asyncio.to_thread(self.stop_event.wait))
        await asyncio.wait([stopper, *tasks], return_when=asyncio.FIRST_COMPLETED)
        self.stop_event.set()
        if gateway is not None:
            await gateway.close_all()
        for server in self._servers:
            server.should_exit = True
        await asyncio.gather(*tasks, return_exceptions=True)
        await stopper

    @property
    def console_url(self) -> str | None:
        if self.config.console_port < 0 or self.config.state_file is None:
            return None
        return f"http://127.0.0.1:{self.config.console_port}"

    def _console_config(self, state_file: Path) -> uvicorn.Config:
        """The console beside the local cloud, reading it through its state file as `herald console` does."""
        from herald_ops.stack import Stack

        from herald_dev.console.app import create_console

        log.info("Herald console on %s", self.console_url)
        stack = Stack(None, None, None, state_file, self.config.template_path)
        # On loopback whatever --host the cloud has: the console acts with the operator's rights.
        return uvicorn.Config(
            create_console(stack), host="127.0.0.1", port=self.config.console_port, log_level="warning"
        )

    def _start_http(self, function: LocalFunction) -> subprocess.Popen[bytes]:
        """The HTTP function's app in a process of its own (its imports, state and environment), behind the
        port API Gateway would be."""
        module = function.handler.rpartition(".")[0]
        command = [sys.executable, "-m", "herald_dev.lambda_instance", "http", str(function.code_dir), module]
        command += [self.config.host, str(self.config.http_port)]
        environment = {**function.environment, "HERALD_LOCAL_PARENT_PID": str(os.getpid()), **metered_as(function)}
        return subprocess.Popen(command, env=environment, start_new_session=True)  # as runtime.py's instances

    def _wait_for_http(self, process: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise RuntimeError(f"the HTTP function's process exited ({process.returncode})")
            with contextlib.suppress(OSError), socket.create_connection((self.config.host, self.config.http_port), 0.2):
                return
            time.sleep(0.05)
        raise RuntimeError(f"the HTTP function did not listen on {self.http_url} within {timeout_s:.0f} s")

    def shutdown(self) -> None:
        """Stop every part, one log line each (and no traceback, whatever stopped it)."""
        self.stop_event.set()
        if self._http_process is not None:
            self._http_process.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._http_process.wait(timeout=5)
            log.info("stopped the HTTP API (%s)", self.http_url)
        if self._servers:
            log.info("stopped the WebSocket API%s", " and the console" if self.console_url else "")
        for source in self.sources:
            source.join(timeout=5)
        log.info("stopped %d event sources (streams, queues, schedules, engine, sample owner)", len(self.sources))
        for function in self.functions.values():
            function.stop()
        log.info("stopped %d functions", len(self.functions))
        if self._prepared:
            self._save_state()
        if self.fakes is not None:
            self.fakes.stop()
            log.info("stopped the provider fakes")
        if self._moto is not None:
            self._moto.stop()
            log.info("stopped the embedded AWS (moto)")
        if self.config.state_file is not None and owns(self.config.state_file):  # another's is never removed
            self.config.state_file.unlink()
        log.info("local cloud stopped")

    def _stop_for(self, why: str) -> None:
        if not self.stop_event.is_set():
            log.info("stopping: %s", why)
        self.stop_event.set()

    def run(self) -> None:
        """Prepare, serve until Ctrl-C / SIGINT / SIGTERM (to this process, or a SIGINT to the `make` that runs
        it), and stop cleanly."""
        watch_make(self.stop_event, self._stop_for)
        meter_the_cloud(self.stop_event)  # before its clients are made; a cloud not metered: nothing
        previous_term = signal.signal(signal.SIGTERM, signal.default_int_handler)  # while preparing, as SIGINT
        loop = asyncio.new_event_loop()
        try:
            try:
                self.prepare()
            except KeyboardInterrupt:
                self._stop_for("interrupted while starting")
                return
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, self._stop_for, signal.Signals(signum).name)
            if not self.stop_event.is_set():
                loop.run_until_complete(self.serve())
        finally:
            loop.close()
            signal.signal(signal.SIGTERM, previous_term)
            self.shutdown()
