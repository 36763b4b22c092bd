"""Herald's metrics emitter as the tests run it: handlers invoked from several threads of one interpreter
(which Lambda never does; see tests/support/metrics.py) emit every metric once and never fail to flush."""

import json
import logging
import re
import threading
import warnings
from typing import Any

import pytest

from herald.observability import metrics
from tests.support.lambda_context import FakeLambdaContext

THREADS, INVOCATIONS = 8, 150


def test_concurrent_invocations_emit_every_metric_exactly_once_and_never_fail_to_flush(
    capsys: pytest.CaptureFixture[str],
) -> None:
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> None:
        metrics.add_metric(name="Probe", unit="Count", value=1)

    failures: list[BaseException] = []

    def invoke_many() -> None:
        for _ in range(INVOCATIONS):
            try:
                handler({}, FakeLambdaContext())
            except BaseException as exc:
                failures.append(exc)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        threads = [threading.Thread(target=invoke_many) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    emitted = 0
    for line in capsys.readouterr().out.splitlines():
        record = json.loads(line)
        values = record.get("Probe", [])
        emitted += len(values) if isinstance(values, list) else int(values)
    assert failures == []
    assert emitted == THREADS * INVOCATIONS


def test_metrics_carry_the_stage_of_the_settings_the_process_runs_with(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from herald.container import current

    monkeypatch.setenv("HERALD_STAGE", "prod")
    assert current().settings.stage == "prod"

    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> None:
        metrics.add_metric(name="Probe", unit="Count", value=1)

    handler({}, FakeLambdaContext())
    (emitted,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"Probe"' in line]
    assert emitted["stage"] == "prod"


def test_a_readable_log_line_has_its_time_level_function_message_and_own_keys_and_no_lambda_context() -> None:
    from herald.observability import ReadableFormatter

    formatter = ReadableFormatter(service="herald-events-worker")
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "lane drained", None, None)
    record.lane, record.result = "svc/chat_id:oc_1", "caught_up"  # what `logger.info(..., lane=...)` adds
    formatter.append_keys(cold_start=False, function_request_id="r-1")
    line = formatter.format(record)
    assert re.match(r"\d\d:\d\d:\d\d INFO  herald-events-worker: lane drained  lane=svc/chat_id:oc_1", line)
    assert "cold_start" not in line and "function_request_id" not in line and "{" not in line
