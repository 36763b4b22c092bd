"""What a local cloud is told at its start: its template, ports, endpoints and what it keeps between runs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from herald_dev.fakes import Providers


@dataclass
class LocalCloudConfig:
    template_path: Path
    stack_name: str = "herald-local"
    region: str = "us-east-1"
    host: str = "127.0.0.1"
    http_port: int = 8080
    ws_port: int = 8081
    moto_port: int = 4566
    aws_endpoint: str | None = None  # an already running AWS emulator instead of the embedded moto
    dynamodb_endpoint: str | None = None  # e.g. DynamoDB Local
    sqs_endpoint: str | None = None  # e.g. fauxqs (infra/fauxqs), an SQS server independent of moto
    parameter_overrides: dict[str, str] = field(default_factory=dict)
    environment: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)  # template parameter naming an SSM secret -> value
    state_file: Path | None = None
    sqs_wait_seconds: int = 20
    tencent_im_port: int = 8090
    feishu_port: int = 8091
    ttl_sweep_seconds: float = 10.0
    engine_turn_seconds: float = 0.0  # > 0: run the reference agent engine (turns take this long)
    sample_owner_port: int = -1  # >= 0: run the sample owner service ("join group") there (0: any port)
    console_port: int = -1  # >= 0: serve the Herald console there (needs a state file)
    # Providers running outside this process (`herald backing`): then no fakes are started here.
    providers: Providers | None = None
    # Where the embedded AWS and the fakes are kept between runs (None: nothing kept), and whether to start empty.
    data_dir: Path | None = None
    fresh: bool = False

    @property
    def embeds_dynamodb(self) -> bool:
        """DynamoDB is the moto server in this process: its writes can wake the local streams' readers."""
        return self.aws_endpoint is None and self.dynamodb_endpoint is None
