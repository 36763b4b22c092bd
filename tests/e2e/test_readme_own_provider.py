"""The README's own-provider command, run as written once `make dev` has stopped (tests/e2e/test_readme.py):
a Tencent IM of the user's at the address it names, with the key it names, receives the pushes."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from herald_dev.fakes.tencent_im import FakeTencentIm
from tests.support.local_cloud import REPO
from tests.support.readme import DEV_STATE, newcomer_environment, readme_blocks
from tests.support.tokens import make_token
from tests.support.waiting import eventually

pytestmark = pytest.mark.e2e
COMMAND_START = ".venv/bin/herald local --parameter TencentImBaseUrl=http://127.0.0.1:9000"


def test_a_tencent_im_of_ones_own_receives_the_pushes_with_the_readme_command(tmp_path: Path) -> None:
    if DEV_STATE.exists():
        pytest.fail(f"{DEV_STATE} exists: a local cloud holds the README's ports")
    (command,) = [block for first, block in readme_blocks().items() if first.startswith(COMMAND_START)]
    own = FakeTencentIm(sdk_app_id=1400000777, admin="administrator", secret_key="YOUR_SECRET_KEY", port=9000).start()
    log_path = tmp_path / "own-provider.log"
    process = subprocess.Popen(
        ["bash", "-c", command], cwd=REPO, env=newcomer_environment(), stdout=log_path.open("wb"),
        stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    try:

        def ready() -> None:
            assert process.poll() is None, log_path.read_text()[-4000:]
            assert DEV_STATE.exists()

        eventually(ready, timeout=90)
        invite = httpx.post(
            "http://127.0.0.1:8080/api/v1/role-invitations",
            json={"invitation_type": "bd", "target_user_id": "10077"},
            headers={"Authorization": f"Bearer {make_token('10001')}"},
        )
        assert invite.status_code == 200, invite.text

        def pushed() -> None:
            assert [m["data"]["type"] for m in own.messages if m["to"] == "10077"] == ["im_confirm"]

        eventually(pushed)
    finally:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=30)
        own.stop()
