"""What template.yaml declares around its functions, made to run on this machine: each function's event sources
(SQS queues, DynamoDB streams, schedules) with Lambda's batch semantics, a TTL sweeper for each table with TTL,
the HTTP function, the WebSocket API's routes, and each function's environment."""

from __future__ import annotations

import os
import re
import threading
from typing import Any, Protocol

from herald_ops.template import StackTemplate, TemplateError

from herald_dev.config import LocalCloudConfig
from herald_dev.fakes import PROVIDER_PARAMETERS, Providers
from herald_dev.local_identity import LOCAL_JWT_SECRET
from herald_dev.runtime import LocalFunction
from herald_dev.schedule_source import ScheduleEventSource, rate_seconds
from herald_dev.sqs_source import SqsEventSource
from herald_dev.stream_source import StreamEventSource, StreamSettings
from herald_dev.ttl_sweeper import TtlSweeper
from herald_dev.websocket_gateway import WebSocketGateway
from herald_dev.write_signal import WriteSignal


class EventSource(Protocol):
    def start(self, stop: threading.Event) -> None: ...

    def join(self, timeout: float) -> None: ...


class TemplateWiring:
    """The template's event sources for these functions, through `client` (a boto3 client for a service).
    `restored`: the tables were loaded from a saved state, so streams are read from after the loaded items."""

    def __init__(
        self,
        stack: StackTemplate,
        functions: dict[str, LocalFunction],
        client: Any,
        *,
        restored: bool,
        sqs_wait_seconds: int,
        rates: dict[str, str],
        dynamodb_writes: WriteSignal,
    ) -> None:
        self.stack = stack
        self.functions = functions
        self._client = client
        self._restored = restored
        self._sqs_wait_seconds = sqs_wait_seconds
        self._rates = rates  # HERALD_LOCAL_RATE_<function>: a schedule's local interval in seconds
        self._writes = dynamodb_writes  # the writes its streams' readers wait on (embedded moto's, or told)

    def queue_url_for_arn(self, arn: str) -> str:
        for attributes in self.stack.attributes.values():
            if attributes.get("Arn") == arn and "QueueUrl" in attributes:
                return str(attributes["QueueUrl"])
        raise TemplateError(f"no queue with ARN {arn}")

    def event_sources(self) -> list[EventSource]:
        sources: list[EventSource] = []
        for logical_id, function in self.functions.items():
            for event_name, event in function.properties.get("Events", {}).items():
                kind = event.get("Type")
                props = self.stack.resolve(event.get("Properties", {}))
                if kind == "SQS":
                    sources.append(self._sqs(function, props))
                elif kind == "DynamoDB":
                    sources.append(self._stream(function, props))
                elif kind == "Schedule" and str(props.get("Enabled", True)).lower() != "false":
                    local_rate = float(self._rates.get(f"HERALD_LOCAL_RATE_{logical_id}", 0))
                    interval = local_rate or rate_seconds(props["Schedule"])
                    sources.append(ScheduleEventSource(function, f"{logical_id}-{event_name}", interval))
        return sources

    def _sqs(self, function: LocalFunction, props: dict[str, Any]) -> SqsEventSource:
        queue_arn = props["Queue"]
        return SqsEventSource(
            function,
            self._client("sqs"),
            self.queue_url_for_arn(queue_arn),
            queue_arn,
            batch_size=int(props.get("BatchSize", 10)),
            report_batch_item_failures="ReportBatchItemFailures" in props.get("FunctionResponseTypes", []),
            pollers=int(props.get("ScalingConfig", {}).get("MaximumConcurrency", 2)),
            wait_seconds=self._sqs_wait_seconds,
        )

    def _stream(self, function: LocalFunction, props: dict[str, Any]) -> StreamEventSource:
        on_failure = props.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
        settings = StreamSettings(
            batch_size=int(props.get("BatchSize", 100)),
            # Loaded items are not new writes: a restored cloud reads its streams from after them.
            starting_position="LATEST" if self._restored else str(props.get("StartingPosition", "TRIM_HORIZON")),
            report_batch_item_failures="ReportBatchItemFailures" in props.get("FunctionResponseTypes", []),
            maximum_retry_attempts=int(props.get("MaximumRetryAttempts", -1)),
            bisect_on_error=str(props.get("BisectBatchOnFunctionError", False)).lower() == "true",
            on_failure_queue_url=self.queue_url_for_arn(on_failure) if on_failure else None,
            writes=self._writes,
        )
        return StreamEventSource(
            function, self._client("dynamodbstreams"), self._client("sqs"), props["Stream"], settings
        )

    def ttl_sweepers(self, sweep_seconds: float) -> list[EventSource]:
        """DynamoDB removes expired items by itself; locally a sweeper does, for each table with TTL."""
        dynamodb = self._client("dynamodb")
        sweepers: list[EventSource] = []
        for logical_id, resource in self.stack.of_type("AWS::DynamoDB::Table").items():
            ttl = self.stack.resolve(resource.get("Properties", {}).get("TimeToLiveSpecification", {}))
            if not ttl.get("Enabled"):
                continue
            keys = [k["AttributeName"] for k in self.stack.resolve(resource["Properties"]["KeySchema"])]
            table = self.stack.physical_name(logical_id)
            sweepers.append(TtlSweeper(dynamodb, table, keys, ttl["AttributeName"], sweep_seconds))
        return sweepers

    def http_function(self) -> LocalFunction | None:
        for function in self.functions.values():
            if any(e.get("Type") == "HttpApi" for e in function.properties.get("Events", {}).values()):
                return function
        return None

    def websocket_gateway(self) -> WebSocketGateway | None:
        """The WebSocket API's routes, each to the function its integration invokes."""
        apis = {
            lid: res
            for lid, res in self.stack.of_type("AWS::ApiGatewayV2::Api").items()
            if res["Properties"].get("ProtocolType") == "WEBSOCKET"
        }
        if not apis:
            return None
        api_id, api = next(iter(apis.items()))
        selection = str(api["Properties"].get("RouteSelectionExpression", "$request.body.action"))
        by_arn = {self.stack.get_att(lid, "Arn"): f for lid, f in self.functions.items()}
        integrations = {
            self.stack.physical_name(lid): str(self.stack.resolve(res["Properties"].get("IntegrationUri", "")))
            for lid, res in self.stack.of_type("AWS::ApiGatewayV2::Integration").items()
        }
        routes: dict[str, LocalFunction] = {}
        for res in self.stack.of_type("AWS::ApiGatewayV2::Route").values():
            target = str(self.stack.resolve(res["Properties"].get("Target", "")))
            uri = integrations.get(target.removeprefix("integrations/"), "")
            match = re.search(r"functions/(arn:[^/]+)/invocations", uri)
            if match and match.group(1) in by_arn:
                routes[str(res["Properties"]["RouteKey"])] = by_arn[match.group(1)]
        return WebSocketGateway(routes, api_id=api_id, stage="local", selection_key=selection.rsplit(".", 1)[-1])


def local_functions(
    stack: StackTemplate, config: LocalCloudConfig, providers: Providers | None
) -> dict[str, LocalFunction]:
    """Each function of the template, its processes given the environment Lambda would give them: the template's
    variables for that function, then the local cloud's (endpoints, the local token secret, the fakes), then
    `--env`."""
    local = {
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "HERALD_WS_MANAGEMENT_ENDPOINT": f"http://{config.host}:{config.ws_port}",
        "HERALD_JWT_HS256_SECRET": LOCAL_JWT_SECRET,
        # Owner services run on this machine (the sample owner, tests' loopback owners): http to loopback.
        "HERALD_OWNER_CALLBACKS_HTTPS_ONLY": "false",
        "HERALD_OWNER_CALLBACKS_ALLOW_PRIVATE": "true",
        # A tenant set, disabled or enabled with herald-ops reaches every function at once.
        "HERALD_TENANT_CACHE_SECONDS": "0",
        "HERALD_PAUSES_CACHE_SECONDS": "0",  # and an operator's pause or resume
    }
    # Locally tokens are HS256 from `herald token`; issuer/audience apply when configured explicitly.
    unset = {"HERALD_JWT_ISSUER", "HERALD_JWT_AUDIENCE"}
    if providers is not None:
        fakes = providers.without(_providers_given(config))
        local.update(fakes.environment)
        unset.update(fakes.unset)
    functions = {}
    for logical_id in stack.of_type("AWS::Serverless::Function"):
        function = LocalFunction.from_template(stack, logical_id, config.template_path.parent)
        environment = {**os.environ, **function.template_environment(stack), **local}
        for key in unset:
            environment.pop(key, None)
        function.environment = {**environment, **config.environment}
        functions[logical_id] = function
    return functions


def _providers_given(config: LocalCloudConfig) -> set[str]:
    """The providers the command line points somewhere with template parameters: no fake stands in."""
    return {
        provider
        for provider, parameters in PROVIDER_PARAMETERS.items()
        if any(name in config.parameter_overrides for name in parameters)
    }
