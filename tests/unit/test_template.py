"""The local cloud reads template.yaml as CloudFormation would."""

from __future__ import annotations

from pathlib import Path

import pytest
from herald_ops.template import StackTemplate, TemplateError, load_template

REPO = Path(__file__).resolve().parents[2]

TEMPLATE = """
Parameters:
  Stage: {Type: String, Default: dev}
  Empty: {Type: String, Default: ""}
Conditions:
  HasEmpty: !Not [!Equals [!Ref Empty, ""]]
Globals:
  Function:
    Timeout: 5
    Environment:
      Variables:
        SHARED: !Sub "${AWS::StackName}-${Stage}"
Resources:
  Jobs:
    Type: AWS::SQS::Queue
    Properties:
      FifoQueue: true
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: functions/x/
      Handler: app.handler
      Environment:
        Variables:
          QUEUE: !GetAtt Jobs.QueueName
          ARN: !GetAtt [Jobs, Arn]
          OPTIONAL: !If [HasEmpty, !Ref Empty, !Ref AWS::NoValue]
          JOINED: !Join ["/", [a, !Ref Stage]]
"""


@pytest.fixture
def stack(tmp_path: Path) -> StackTemplate:
    path = tmp_path / "template.yaml"
    path.write_text(TEMPLATE)
    return StackTemplate.from_file(path, stack_name="s", parameter_overrides={"Stage": "local"})


def test_short_form_intrinsics_resolve_against_the_local_stack(stack: StackTemplate) -> None:
    env = stack.resolve(stack.function_properties("Fn")["Environment"]["Variables"])
    assert env == {
        "SHARED": "s-local",
        "QUEUE": "s-Jobs.fifo",
        "ARN": "arn:aws:sqs:us-east-1:123456789012:s-Jobs.fifo",
        "JOINED": "a/local",
    }


def test_globals_merge_into_each_function(stack: StackTemplate) -> None:
    props = stack.function_properties("Fn")
    assert props["Timeout"] == 5
    assert set(props["Environment"]["Variables"]) == {"SHARED", "QUEUE", "ARN", "OPTIONAL", "JOINED"}


def test_created_resource_attributes_win_over_derived_names(stack: StackTemplate) -> None:
    stack.attributes["Jobs"] = {"Ref": "http://q/url", "Arn": "arn:real"}
    assert stack.resolve({"Ref": "Jobs"}) == "http://q/url"
    assert stack.resolve({"Fn::GetAtt": ["Jobs", "Arn"]}) == "arn:real"


def test_unknown_reference_is_an_error(stack: StackTemplate) -> None:
    with pytest.raises(TemplateError):
        stack.resolve({"Ref": "Nope"})


def test_the_real_template_lists_every_function_with_code_on_disk() -> None:
    stack = StackTemplate(load_template(REPO / "template.yaml"))
    functions = stack.of_type("AWS::Serverless::Function")
    assert functions
    for logical_id in functions:
        props = stack.function_properties(logical_id)
        assert (REPO / props["CodeUri"] / "app.py").is_file(), logical_id
        assert props["Runtime"] == "python3.11"


def test_every_fifo_queue_a_function_sends_to_runs_in_high_throughput_mode() -> None:
    """Order and deduplication per message group is all Herald relies on (each send names its group)."""
    resources = load_template(REPO / "template.yaml")["Resources"]
    for name in ("ImPushQueue", "EventsQueue", "TurnsQueue"):
        properties = resources[name]["Properties"]
        assert properties["DeduplicationScope"] == "messageGroup", name
        assert properties["FifoThroughputLimit"] == "perMessageGroupId", name


KEY = "arn:aws:kms:us-east-1:123456789012:key/0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0"


@pytest.mark.parametrize("key", ["", KEY])
def test_a_customer_key_encrypts_every_table_and_queue_and_every_function_may_use_it(key: str) -> None:
    stack = StackTemplate(load_template(REPO / "template.yaml"), parameter_overrides={"KmsKeyArn": key})
    for table in stack.of_type("AWS::DynamoDB::Table"):
        sse = stack.resolve(stack.resources[table]["Properties"]["SSESpecification"])
        expected = {"SSEEnabled": True, "SSEType": "KMS", "KMSMasterKeyId": key} if key else {"SSEEnabled": True}
        assert sse == expected, table
    for queue in stack.of_type("AWS::SQS::Queue"):
        properties = stack.resolve(stack.resources[queue]["Properties"])
        assert properties.get("KmsMasterKeyId") == (key or None), queue
        assert properties.get("SqsManagedSseEnabled") is (None if key else True), queue
    policy = stack.resources["CustomerKeyUse"]
    assert stack.condition(policy["Condition"]) is bool(key)
    roles = {reference["Ref"] for reference in policy["Properties"]["Roles"]}
    assert roles == {f"{function}Role" for function in stack.of_type("AWS::Serverless::Function")}


def test_the_local_cloud_runs_as_many_instances_of_a_function_as_its_queues_mappings_may_invoke() -> None:
    """Lambda invokes an SQS-mapped function up to each mapping's `ScalingConfig.MaximumConcurrency`: the events
    worker's ten lanes of new work and ten crowded-out lanes at once, not the local default of four (nor ten in
    all: the waiting queue's lanes, sleeping for their moments, held every instance the new work needed)."""
    from herald_dev.runtime import DEFAULT_INSTANCES, LocalFunction

    stack = StackTemplate(load_template(REPO / "template.yaml"), stack_name="t")
    events_worker = LocalFunction.from_template(stack, "EventsWorkerFunction", REPO)
    assert events_worker.max_instances == 20
    assert LocalFunction.from_template(stack, "HealthGaugesFunction", REPO).max_instances == DEFAULT_INSTANCES


def test_a_template_read_again_is_a_fresh_copy_and_an_edited_file_is_parsed_anew(tmp_path: Path) -> None:
    """Parsed once per version of the file: what one caller changes, the next never sees; an edit is seen."""
    path = tmp_path / "template.yaml"
    path.write_text(TEMPLATE)
    first = load_template(path)
    first["Resources"]["Jobs"]["Properties"]["FifoQueue"] = False
    assert load_template(path)["Resources"]["Jobs"]["Properties"]["FifoQueue"] is True
    path.write_text(TEMPLATE.replace("FifoQueue: true", "FifoQueue: true\n      DelaySeconds: 5"))
    assert load_template(path)["Resources"]["Jobs"]["Properties"]["DelaySeconds"] == 5
