"""`herald local --parameter ... --secret ...` points the functions at a provider of the user's choosing, as
the same template parameters do in AWS: the built-in fake steps aside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.integration.test_confirms_local_cloud import Client, im_messages, new_user
from tests.support.local_cloud import RATE_LIMITS_OFF, LocalCloudProcess
from tests.support.waiting import eventually

pytestmark = pytest.mark.integration


@pytest.mark.skipif(os.environ.get("HERALD_TEST_DYNAMODB") == "local", reason="about the providers, not the tables")
def test_a_tencent_im_given_by_template_parameters_and_an_ssm_secret_receives_the_pushes(
    tmp_path: Path, sqs_endpoint: str | None
) -> None:
    own = FakeTencentIm(sdk_app_id=1400000777, admin="ops_admin", secret_key="the-users-own-key").start()
    cloud = LocalCloudProcess(
        tmp_path,
        sqs_endpoint=sqs_endpoint,
        parameters={
            "TencentImBaseUrl": own.url,
            "TencentImSdkAppId": "1400000777",
            "TencentImAdminIdentifier": "ops_admin",
        },
        secrets={"TencentImSecretKeyParameter": "the-users-own-key"},
        env=RATE_LIMITS_OFF,
    ).start()
    try:
        inviter, target = Client(cloud, new_user()), Client(cloud, new_user())
        inviter.invite(target.user)

        def pushed() -> None:
            assert [m["data"]["type"] for m in own.messages if m["to"] == target.user] == ["im_confirm"]

        eventually(pushed)  # signed with the key from SSM: the fake checks every UserSig
        assert im_messages(cloud, target.user) == []  # the built-in fake received nothing
    finally:
        cloud.stop()
        own.stop()
