"""Every metric the template's alarms and dashboard watch is one Herald emits, under the service name of a
function that exists: a renamed metric must not leave an alarm watching nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from herald_ops.template import load_template

REPO = Path(__file__).resolve().parents[1].parent
TEMPLATE = load_template(REPO / "template.yaml")
SOURCES = "\n".join(p.read_text() for p in [*REPO.glob("layers/herald/**/*.py"), *REPO.glob("functions/*/app.py")])
# Metrics named at run time: ExternalEvent_<outcome>, InboxNotification<outcome>.
DYNAMIC = {"ExternalEvent_": 'f"ExternalEvent_{', "InboxNotification": 'f"InboxNotification{'}


def service_names() -> set[str]:
    names = set()
    for resource in TEMPLATE["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            names.add(resource["Properties"]["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"])
    return names


def emitted_by_code(name: str) -> bool:
    if f'"{name}"' in SOURCES:
        return True
    return any(name.startswith(prefix) and marker in SOURCES for prefix, marker in DYNAMIC.items())


def herald_alarm_metrics() -> list[tuple[str, str]]:
    found = []
    for resource in TEMPLATE["Resources"].values():
        if resource["Type"] != "AWS::CloudWatch::Alarm":
            continue
        props = resource["Properties"]
        stats = [m["MetricStat"]["Metric"] for m in props.get("Metrics", []) if "MetricStat" in m]
        for metric in [props, *stats]:
            if metric.get("Namespace") == "Herald":
                dims = {d["Name"]: d["Value"] for d in metric["Dimensions"]}
                found.append((metric["MetricName"], dims["service"]))
    return found


def dashboard_metrics() -> list[list[Any]]:
    body = TEMPLATE["Resources"]["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"][0]
    document = json.loads(re.sub(r"\$\{[^}]+\}", "x", body))
    return [row for widget in document["widgets"] for row in widget["properties"]["metrics"]]


def test_every_alarm_watches_a_metric_the_code_emits_under_an_existing_service() -> None:
    watched = herald_alarm_metrics()
    assert {name for name, _ in watched} >= {"EventsUnknownJobs", "EventsOldestBlockedAge", "ImPushFailed"}
    for name, service in watched:
        assert emitted_by_code(name), f"alarm watches {name}, which nothing emits"
        assert service in service_names(), f"alarm expects {name} from {service}, no such function"


def expanded(rows: list[list[Any]]) -> list[list[str]]:
    """CloudWatch's shorthand undone: "." repeats the value above, "..." all values above but the last ones."""
    result: list[list[str]] = []
    for row in rows:
        values = [v for v in row if not isinstance(v, dict)]
        previous = result[-1] if result else []
        if values and values[0] == "...":
            values = previous[: len(previous) - (len(values) - 1)] + values[1:]
        result.append([previous[i] if v == "." else v for i, v in enumerate(values)])
    return result


def test_dashboard_is_valid_json_and_charts_only_emitted_metrics() -> None:
    rows = expanded(dashboard_metrics())
    herald = [row for row in rows if row[0] == "Herald"]
    assert len(herald) > 10
    for _namespace, name, *dimensions in herald:
        assert emitted_by_code(name), f"dashboard charts {name}, which nothing emits"
        assert dict(zip(dimensions[::2], dimensions[1::2], strict=True))["service"] in service_names()


def test_every_dead_letter_queue_has_an_alarm() -> None:
    resources = TEMPLATE["Resources"]
    queues = {lid for lid, r in resources.items() if r["Type"] == "AWS::SQS::Queue"}
    dead = {
        r["Properties"]["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
        for r in resources.values()
        if r["Type"] == "AWS::SQS::Queue" and "RedrivePolicy" in r["Properties"]
    } | {"StreamFailures"}
    alarmed = {
        d["Value"]["Fn::GetAtt"][0]
        for r in resources.values()
        if r["Type"] == "AWS::CloudWatch::Alarm"
        for d in r["Properties"].get("Dimensions", [])
        if d["Name"] == "QueueName"
    }
    assert dead <= queues and dead == alarmed


TENANT_QUERY = re.compile(
    r"SELECT SUM\((\w+)\) FROM SCHEMA\(Herald, ([\w, ]+)\)\s+WHERE stage = '\$\{Stage\}' GROUP BY app_code"
)


def test_each_per_tenant_alarm_watches_a_metric_counted_per_tenant_with_exactly_its_dimensions(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Metrics Insights SCHEMA matches only metrics with exactly its dimensions: the alarm's and the code's
    must be the same set, or the alarm watches nothing."""
    from herald.observability import metrics, observe_stage

    queries = [
        metric["Expression"]["Fn::Sub"]
        for resource in TEMPLATE["Resources"].values()
        if resource["Type"] == "AWS::CloudWatch::Alarm"
        for metric in resource["Properties"].get("Metrics", [])
        if "SCHEMA(" in str(metric.get("Expression", ""))
    ]
    watched = [TENANT_QUERY.search(query) for query in queries]
    assert len(watched) == 3 and all(watched), queries
    monkeypatch.setenv("POWERTOOLS_SERVICE_NAME", "herald-im-sender")
    before = dict(metrics.default_dimensions)
    observe_stage("prod")
    try:
        emitted_dimensions = [dimensions_of(found, capsys) for found in watched]
    finally:
        metrics.set_default_dimensions(**before)
    for found, dimensions in zip(watched, emitted_dimensions, strict=True):
        assert found is not None
        assert sorted(dimensions) == sorted(part.strip() for part in found.group(2).split(","))


def dimensions_of(found: re.Match[str] | None, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The dimensions the code emits the alarm's metric with, for a tenant."""
    from herald.observability import count_for_tenant

    assert found is not None
    name = found.group(1)
    assert f'count_for_tenant("{name}"' in SOURCES, f"nothing counts {name} per tenant"
    capsys.readouterr()
    count_for_tenant(name, "shop")
    (emitted,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if name in line]
    (dimensions,) = emitted["_aws"]["CloudWatchMetrics"][0]["Dimensions"]
    return list(dimensions)
