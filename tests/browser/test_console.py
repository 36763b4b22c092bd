"""The Herald console in a real browser (headless Chromium from Debian, through its chromedriver) against a
local cloud: each panel is clicked through as a person would, and each test leaves a screenshot of its panel
in docs/console/ for the README."""

from __future__ import annotations

import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from herald_ops.stack import DEFAULT_TEMPLATE, Stack
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from herald.auth.dynamo import DynamoServiceKeyStore
from herald.auth.service_keys import ServiceKeys
from herald_dev.console.app import create_console
from tests.support.local_cloud import RATE_LIMITS_OFF, REPO, LocalCloudProcess, free_port
from tests.support.tokens import make_token

pytestmark = pytest.mark.browser
SCREENSHOTS = REPO / "docs" / "console"
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCloudProcess]:
    """Feishu's uuid window closed at once, so an interrupted send waits for an operator (Operate)."""
    process = LocalCloudProcess(
        tmp_path_factory.mktemp("console-cloud"),
        env={"HERALD_EVENTS_SEND_DEDUP_WINDOW_SECONDS": "0", "HERALD_EVENTS_RETRY_BASE_MS": "500", **RATE_LIMITS_OFF},
    ).start()
    yield process
    process.stop()


@contextmanager
def serve_console(state_file: Path) -> Iterator[str]:
    """`herald console` for the local cloud that `state_file` describes, on a free port, until closed."""
    port = free_port()
    stack = Stack(None, None, None, state_file, DEFAULT_TEMPLATE)
    server = uvicorn.Server(uvicorn.Config(create_console(stack), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


@pytest.fixture(scope="module")
def console(cloud: LocalCloudProcess) -> Iterator[str]:
    with serve_console(cloud.state_file) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[WebDriver]:
    if not Path(CHROMEDRIVER).exists():
        pytest.fail(f"{CHROMEDRIVER} is missing: `make test` installs Debian's chromium and chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def until(check: Callable[[], Any], timeout: float = 30, what: str = "") -> Any:
    """`check`'s first truthy answer (an exception counts as not yet)."""
    deadline, last = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        try:
            answer = check()
            if answer:
                return answer
        except Exception as exc:
            last = exc
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what or check}: {last!r}")


def click(find: Callable[[], WebElement], what: str) -> None:
    """Clicks what `find` finds, finding it again if a redraw replaced it first (a click that raised never landed)."""

    def clicked() -> bool:
        find().click()
        return True

    until(clicked, what=what)


def panel(browser: WebDriver, console: str, name: str) -> None:
    browser.get(f"{console}/?panel={name}")
    until(lambda: browser.find_element(By.ID, name).is_displayed(), what=f"the {name} panel")


def fill(browser: WebDriver, element_id: str, value: str) -> None:
    field = browser.find_element(By.ID, element_id)
    field.clear()
    field.send_keys(value)


def screenshot(browser: WebDriver, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def service_key(cloud: LocalCloudProcess, service: str, capability: str, **rights: Any) -> dict[str, str]:
    keys = ServiceKeys(DynamoServiceKeyStore(cloud.resource("ServiceKeysTable"), cloud.client("dynamodb")))
    key, _ = keys.create_key(service, [capability], **rights)
    return {"Authorization": f"Bearer {key}"}


def new_user() -> str:
    return str(30_000_000 + secrets.randbelow(10**8))


def test_im_an_invitation_card_appears_is_accepted_and_greys_out_when_its_update_arrives(
    cloud: LocalCloudProcess, console: str, browser: WebDriver
) -> None:
    """Viewed as the inviter, the card says only the receiver may act and offers to view as them; its times
    are shown, and when it was answered."""
    inviter, target = new_user(), new_user()
    panel(browser, console, "im")
    fill(browser, "im-a", target)
    fill(browser, "im-b", inviter)
    invited = httpx.post(
        f"{cloud.http_url}/api/v1/role-invitations",
        json={"invitation_type": "host", "target_user_id": target},
        headers={"Authorization": f"Bearer {make_token(inviter)}"},
    )
    assert invited.status_code == 200, invited.text
    card: WebElement = until(lambda: browser.find_element(By.CSS_SELECTOR, "li.confirm"), what="the confirm card")
    assert "invited you to become a host" in card.text and card.get_attribute("data-state") == "pending"
    assert not card.find_element(By.CSS_SELECTOR, 'button[data-action="accept"]').is_enabled()
    hint = card.find_element(By.CSS_SELECTOR, ".who-acts")
    assert f"Only {target}, the receiver, may act on it." in hint.text
    assert re.search(r"sent .+ \(\d+ s ago\) · expires .+ \(in \d+ d( \d+ h)?\)", card.text), card.text
    click(lambda: browser.find_element(By.CSS_SELECTOR, ".who-acts button"), what=f"View as {target}")
    accept = until(
        lambda: (
            browser.find_element(By.CSS_SELECTOR, 'li.confirm button[data-action="accept"]').is_enabled()
            and browser.find_element(By.CSS_SELECTOR, 'li.confirm button[data-action="accept"]')
        ),
        what="the receiver's own buttons",
    )
    assert browser.find_element(By.ID, "im-b").get_attribute("value") == target
    assert not browser.find_elements(By.CSS_SELECTOR, ".who-acts")
    accept.click()
    until(lambda: "accept: the API answered accepted" in browser.find_element(By.ID, "im-status").text, what="answer")
    greyed = until(lambda: browser.find_element(By.CSS_SELECTOR, "li.confirm.done"), what="the greyed card")
    assert greyed.get_attribute("data-state") == "accepted"
    assert re.fullmatch(r"accepted · .+ \(\d+ s ago\)", greyed.find_element(By.CSS_SELECTOR, ".state").text)
    assert all(not b.is_enabled() for b in greyed.find_elements(By.TAG_NAME, "button"))
    screenshot(browser, "im")


def test_inbox_the_bell_counts_three_over_the_websocket_and_read_all_brings_it_to_zero(
    cloud: LocalCloudProcess, console: str, browser: WebDriver
) -> None:
    user = new_user()
    producer = service_key(cloud, "console-producer", "/internal/v1/inbox")
    panel(browser, console, "inbox")
    fill(browser, "inbox-user", user)
    browser.find_element(By.CSS_SELECTOR, "#inbox-form button[type=submit]").click()
    until(lambda: browser.find_element(By.ID, "inbox-socket").text == f"connected as {user}", what="the socket")
    titles = ["Q0", "Q1", "Q2 \u202edrowssap\x1b[2K"]  # what a producer sent is shown, never acted on
    for n, title in enumerate(titles):
        body = {"user_id": user, "kind": "QUESTION_PENDING", "session_id": "s1", "tail": f"q{n}", "title": title}
        assert httpx.post(f"{cloud.http_url}/internal/v1/inbox/notifications", json=body, headers=producer).is_success
    until(lambda: browser.find_element(By.ID, "inbox-count").text == "3", what="a count of 3 from the WebSocket")
    until(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#inbox-items li.unread")) == 3, what="3 unread")
    shown = browser.find_element(By.ID, "inbox-items").text
    assert "Q2 \\u202edrowssap\\x1b[2K" in shown and "\u202e" not in shown and "\x1b" not in shown, shown
    screenshot(browser, "inbox")
    browser.find_element(By.ID, "inbox-read-all").click()
    until(lambda: browser.find_element(By.ID, "inbox-count").text == "0", what="a count of 0 from the WebSocket")


def one_card_at(browser: WebDriver, chat: str, revision: str) -> WebElement | None:
    cards = [c for c in browser.find_elements(By.CSS_SELECTOR, "#cards-list > li") if chat in c.text]
    return cards[0] if len(cards) == 1 and cards[0].get_attribute("data-revision") == revision else None


def test_partner_cards_two_revisions_are_one_card_at_revision_two(
    cloud: LocalCloudProcess, console: str, browser: WebDriver
) -> None:
    chat = f"oc_console_{secrets.token_hex(3)}"
    partner = service_key(cloud, f"console-{secrets.token_hex(3)}", "/events/external", targets=[f"chat_id:{chat}"])
    for revision in (1, 2):
        body = {
            "event_id": f"{chat}-{revision}",
            "event_type": "job.progress",
            "data": {
                "event_id": "job-42",
                "revision": revision,
                "title": "Job 42",
                "status": "running",
                "summary": f"step {revision}",
                "target": {"receive_id": chat, "receive_id_type": "chat_id"},
            },
        }
        assert httpx.post(f"{cloud.http_url}/events/external", json=body, headers=partner).status_code == 202
        if revision == 1:  # shown before revision 2 is posted, so revision 2 updates it (nothing to coalesce)
            panel(browser, console, "cards")
            until(partial(one_card_at, browser, chat, "1"), what="one card at revision 1")
    card = until(partial(one_card_at, browser, chat, "2"), what="one card at revision 2")
    assert "step 2" in card.text
    assert card.find_element(By.CSS_SELECTOR, ".card-status").text == "running · job.progress"
    history = [h.text for h in card.find_elements(By.CSS_SELECTOR, ".history li")]
    assert [h.split(" ")[0] for h in history] == ["send", "update"]
    for revision, line in zip((1, 2), history, strict=True):  # what changed between revisions, and when
        assert re.search(rf"\(\d+ s ago\): Job 42 · running · job.progress · step {revision}$", line), history
    screenshot(browser, "cards")


def test_operate_an_unknown_job_blocks_its_lane_and_resolving_it_on_the_page_drains_the_lane(
    cloud: LocalCloudProcess, console: str, browser: WebDriver
) -> None:
    """The service orders by target: the unknown job holds up its own chat's lane, shown as that lane, while
    the service's other chat is delivered; resolved on the page (its job id holds the lane's "/")."""
    service, chat, other = (
        f"stuck-{secrets.token_hex(3)}",
        f"oc_stuck_{secrets.token_hex(3)}",
        f"oc_free_{secrets.token_hex(3)}",
    )
    partner = service_key(
        cloud, service, "/events/external", targets=[f"chat_id:{chat}", f"chat_id:{other}"], order="target"
    )
    httpx.post(f"{cloud.fake_url('feishu')}/__fake/faults", json=[{"op": "send", "after_send": True}])

    def post(n: int, to: str) -> None:
        data = {
            "title": f"{service} #{n}",
            "status": "running",
            "target": {"receive_id": to, "receive_id_type": "chat_id"},
        }
        body = {"event_id": f"{service}-{n}", "event_type": "job.progress", "data": data}
        assert httpx.post(f"{cloud.http_url}/events/external", json=body, headers=partner).status_code == 202

    post(0, chat)
    panel(browser, console, "operate")
    lane = f"{service}/chat_id:{chat}"
    row = until(
        lambda: next(r for r in browser.find_elements(By.CSS_SELECTOR, "#blocked tbody tr") if lane in r.text),
        timeout=60,
        what="the blocked lane",
    )
    assert "unknown (yours)" in row.text
    shown_id = row.find_element(By.CSS_SELECTOR, "code.id")  # shortened, whole on hover
    assert "…" in shown_id.text and shown_id.get_attribute("title").startswith(f"{lane}:1 ")
    assert re.fullmatch(r".+ \(\d+ s ago\)", row.find_elements(By.TAG_NAME, "td")[4].text)  # blocked since
    post(1, chat)
    post(2, other)

    def cards(to: str) -> list[str]:
        delivered = httpx.get(f"{cloud.fake_url('feishu')}/__fake/messages").json()
        return [c["title"] for c in delivered if c["receive_id"] == to]

    until(lambda: cards(other) == [f"{service} #2"], what="the other chat's lane delivered past the blocked one")
    screenshot(browser, "operate")
    found = [c for c in httpx.get(f"{cloud.fake_url('feishu')}/__fake/messages").json() if c["receive_id"] == chat]
    age = row.find_elements(By.TAG_NAME, "td")[4].text
    # the refresh loop redraws the age every second in the row already shown, so a press is never swallowed
    until(lambda: row.find_elements(By.TAG_NAME, "td")[4].text != age, what="the age redrawn in the same row")
    row.find_element(By.CSS_SELECTOR, "button[data-timeline]").click()
    timeline = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#job-timeline li")]
    assert len(timeline) == 1 and re.search(r"send via cli_\w+: unanswered", timeline[0]), timeline
    row.find_element(By.CSS_SELECTOR, "button[data-job]").click()  # no name yet: asked for first
    until(lambda: "Say who you are" in browser.find_element(By.ID, "operate-status").text, what="the name asked")
    fill(browser, "operator-name", "Ana")
    browser.find_element(By.CSS_SELECTOR, "#operator-form button[type=submit]").click()
    row.find_element(By.CSS_SELECTOR, "button[data-job]").click()
    form = until(lambda: browser.find_element(By.ID, "resolve-form").is_displayed() and browser.find_element(
        By.ID, "resolve-form"), what="the resolve form")  # fmt: skip
    form.find_element(By.CSS_SELECTOR, "input[value=sent]").click()
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()  # sent, without the message id: refused
    until(lambda: "give the Feishu message id" in browser.find_element(By.ID, "operate-status").text, what="refusal")
    fill(browser, "resolve-message-id", found[0]["message_id"])  # the operator found it in Feishu
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    until(
        lambda: not [r for r in browser.find_elements(By.CSS_SELECTOR, "#blocked tbody tr") if lane in r.text],
        what="the lane no longer blocked",
    )
    until(lambda: cards(chat) == [f"{service} #0", f"{service} #1"], what="the event behind it delivered")
    from herald.audit.wiring import audit_log

    acts = audit_log(Stack(None, None, None, cloud.state_file, DEFAULT_TEMPLATE).container).listed(verb="resolve")
    assert (acts[0].actor, acts[0].arguments["action"]) == ("console (Ana)", "sent")  # the name, kept and recorded


def test_operate_a_registered_tenant_is_listed_with_its_apps_and_state_and_never_a_secret(
    cloud: LocalCloudProcess, console: str, browser: WebDriver
) -> None:
    from herald.tenants.models import TencentImApp
    from herald.tenants.wiring import tenants

    app_code = f"shop-{secrets.token_hex(3)}"
    registry = tenants(Stack(None, None, None, cloud.state_file, DEFAULT_TEMPLATE).container)
    registry.set(app_code, "The Shop", TencentImApp(1400000999, "administrator", "/herald/tenants/shop/im"), None)
    registry.switch(app_code, enabled=False)
    panel(browser, console, "operate")
    shown = until(
        lambda: next(r for r in browser.find_elements(By.CSS_SELECTOR, "#tenants tbody tr") if app_code in r.text),
        what="the registered tenant",
    )
    assert "The Shop" in shown.text and "disabled" in shown.text
    assert "1400000999 (/herald/tenants/shop/im)" in shown.text and "the stack's" in shown.text


def test_sessions_a_queued_message_is_shown_with_its_position_and_its_sender_cancels_it(
    cloud: LocalCloudProcess, console: str, browser: WebDriver
) -> None:
    session, member = f"s-{secrets.token_hex(3)}", new_user()
    engine = service_key(cloud, f"engine-{secrets.token_hex(3)}", "/internal/v1/sessions")
    opened = httpx.put(
        f"{cloud.http_url}/internal/v1/sessions/{session}",
        json={"members": {member: "developer"}, "agents": ["po"], "status": "active"},
        headers=engine,
    )
    assert opened.is_success, opened.text
    for text in ("first", "second"):
        posted = httpx.post(
            f"{cloud.http_url}/api/v1/sessions/{session}/agents/po/messages",
            json={"text": text},
            headers={"Authorization": f"Bearer {make_token(member)}"},
        )
        assert posted.status_code == 202, posted.text
    panel(browser, console, "sessions")
    fill(browser, "session-id", session)
    fill(browser, "session-user", member)
    browser.find_element(By.CSS_SELECTOR, "#sessions-form button[type=submit]").click()

    def row(text: str) -> WebElement:
        return next(r for r in browser.find_elements(By.CSS_SELECTOR, "#session-messages tbody tr") if text in r.text)

    until(lambda: "queued (position 1)" in row("second").text, what="the queued message")
    until(lambda: "started" in row("first").text, what="the first message started")
    until(lambda: "po: running, 1 waiting" in browser.find_element(By.ID, "session-who").text, what="who is waiting")
    screenshot(browser, "sessions")
    click(lambda: row("second").find_element(By.TAG_NAME, "button"), what="Cancel on the queued message")
    until(lambda: "cancelled" in row("second").text, what="the message cancelled")
    (turn,) = re.findall(r"started \((\S+)\)", row("first").text)
    finished = httpx.post(
        f"{cloud.http_url}/internal/v1/sessions/{session}/agents/po/turns/{turn}/finish", headers=engine
    )
    assert finished.is_success, finished.text
    until(lambda: f"finished ({turn})" in row("first").text, what="the finished turn shown as finished")


def test_operate_a_dead_letter_is_peeked_then_redriven_after_its_plan_and_the_queues_name(
    cloud: LocalCloudProcess, console: str, browser: WebDriver
) -> None:
    sqs, marker = cloud.client("sqs"), f"turn-{secrets.token_hex(4)}"
    dlq, source = cloud.resource("TurnsDeadLetters"), cloud.resource("TurnsQueue")
    sqs.send_message(
        QueueUrl=dlq, MessageBody=f'{{"turn_id":"{marker}"}}', MessageGroupId="g", MessageDeduplicationId=marker
    )
    panel(browser, console, "operate")

    def dlq_row() -> WebElement:
        return next(r for r in browser.find_elements(By.CSS_SELECTOR, "#dlqs tbody tr") if "TurnsDeadLetters" in r.text)

    until(lambda: dlq_row().find_elements(By.TAG_NAME, "td")[1].text == "1", what="the dead letter")
    assert dlq_row().find_elements(By.TAG_NAME, "td")[2].text.endswith(" s")  # the oldest message's age
    click(lambda: dlq_row().find_element(By.XPATH, ".//button[text()='Peek']"), what="Peek")
    until(lambda: marker in browser.find_element(By.ID, "dlq-detail").text, what="the peeked message")
    (peeked,) = browser.find_elements(By.CSS_SELECTOR, "#dlq-messages tbody tr")  # a table, not raw JSON
    cells = peeked.find_elements(By.TAG_NAME, "td")
    assert marker in cells[5].text and cells[1].text == "g" and cells[2].text.endswith("ago)")
    click(lambda: dlq_row().find_element(By.XPATH, ".//button[starts-with(text(), 'Redrive')]"), what="Redrive")
    until(lambda: "go back to their queue" in browser.find_element(By.ID, "redrive-plan").text, what="the plan")
    fill(browser, "redrive-confirm", "TurnsDeadLetter")  # a typo moves nothing
    browser.find_element(By.CSS_SELECTOR, "#redrive-form button[type=submit]").click()
    until(lambda: "type TurnsDeadLetters" in browser.find_element(By.ID, "operate-status").text, what="the refusal")
    assert dlq_row().find_elements(By.TAG_NAME, "td")[1].text == "1"
    fill(browser, "redrive-confirm", "TurnsDeadLetters")
    browser.find_element(By.CSS_SELECTOR, "#redrive-form button[type=submit]").click()
    until(lambda: dlq_row().find_elements(By.TAG_NAME, "td")[1].text == "0", what="the DLQ emptied")
    moved = sqs.receive_message(QueueUrl=source, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
    assert [m["Body"] for m in moved if marker in m["Body"]] == [f'{{"turn_id":"{marker}"}}']


def test_keyboard_alone_moves_to_the_inbox_opens_the_bell_and_reads_all(
    cloud: LocalCloudProcess, console: str, browser: WebDriver
) -> None:
    user = new_user()
    producer = service_key(cloud, "console-keyboard", "/internal/v1/inbox")
    panel(browser, console, "im")
    keys = ActionChains(browser)

    def focused() -> str:
        return str(browser.switch_to.active_element.get_attribute("id"))

    until(lambda: focused() == "tab-im", what="the selected tab focused")
    keys.send_keys(Keys.ARROW_RIGHT).perform()
    until(lambda: focused() == "tab-inbox" and browser.find_element(By.ID, "inbox").is_displayed(), what="Inbox")
    keys.send_keys(Keys.TAB).perform()
    assert focused() == "inbox-user"
    keys.key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).send_keys(user, Keys.ENTER).perform()
    until(lambda: browser.find_element(By.ID, "inbox-socket").text == f"connected as {user}", what="the socket")
    until(lambda: browser.find_element(By.ID, "inbox-items").text == "No notifications.", what="the empty state")
    body = {"user_id": user, "kind": "QUESTION_PENDING", "session_id": "s1", "tail": "k", "title": "By keyboard"}
    assert httpx.post(f"{cloud.http_url}/internal/v1/inbox/notifications", json=body, headers=producer).is_success
    until(lambda: browser.find_element(By.ID, "inbox-count").text == "1", what="a count of 1 from the WebSocket")
    keys.send_keys(Keys.TAB, Keys.TAB).perform()  # past "Open the bell" to "Read all"
    assert focused() == "inbox-read-all"
    keys.send_keys(Keys.ENTER).perform()
    until(lambda: browser.find_element(By.ID, "inbox-count").text == "0", what="a count of 0 from the WebSocket")


def test_a_local_cloud_that_stopped_answering_is_said_plainly_on_each_panel(
    cloud: LocalCloudProcess, browser: WebDriver, tmp_path: Path
) -> None:
    state = json.loads(cloud.state_file.read_text())
    gone = f"127.0.0.1:{free_port()}"  # nothing listens there
    for key in ("aws_endpoint", "dynamodb_endpoint", "sqs_endpoint", "http_url"):
        state[key] = state[key] and f"http://{gone}"
    state["ws_url"] = f"ws://{gone}"
    state["fakes"] = dict.fromkeys(state["fakes"], f"http://{gone}")
    stopped = tmp_path / "stopped-cloud.json"
    stopped.write_text(json.dumps(state))

    def says_so(status_id: str) -> bool:
        status = browser.find_element(By.ID, status_id)
        shown = status.is_displayed() and "error" in str(status.get_attribute("class"))
        return shown and "not answering" in status.text and gone in status.text

    with serve_console(stopped) as console:
        for name, status_id in (("im", "im-status"), ("cards", "cards-status"), ("operate", "operate-status")):
            panel(browser, console, name)
            until(lambda: says_so(status_id), what=f"the {name} panel's error")  # noqa: B023 (awaited here)
        submitted = (("sessions", "sessions-form", "session-status"), ("inbox", "inbox-form", "inbox-status"))
        for name, form, status_id in submitted:
            panel(browser, console, name)
            browser.find_element(By.CSS_SELECTOR, f"#{form} button[type=submit]").click()
            until(lambda: says_so(status_id), what=f"the {name} panel's error")  # noqa: B023 (awaited here)


@contextmanager
def hostile_page(html: str) -> Iterator[str]:
    """A page of another origin (another port on loopback), as an attacker's site would serve it."""
    from herald_dev.fakes._server import LoopbackServer

    server = LoopbackServer(lambda request: (200, html, "text/html; charset=utf-8"))
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def test_a_rebinding_page_and_a_cross_site_form_get_nothing_from_the_console(
    console: str, cloud: LocalCloudProcess
) -> None:
    """Issue 28: a name resolving to 127.0.0.1 (Chromium's host resolver maps evil.example there) reaches the
    console's socket but names its own Host; a form on another origin posts without JSON or the page token."""
    port = console.rsplit(":", 1)[1]
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--host-resolver-rules=MAP evil.example 127.0.0.1",
    ):
        options.add_argument(argument)
    attacker = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        attacker.get(f"http://evil.example:{port}/console/config")
        shown = until(lambda: attacker.find_element(By.TAG_NAME, "body").text, what="the console's refusal")
        assert "answers only on" in shown and "page_token" not in shown
        minted = attacker.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            "fetch('/console/token', {method: 'POST', headers: {'content-type': 'application/json'},"
            " body: JSON.stringify({user_id: '10002'})}).then(r => r.text().then(t => done(r.status + ' ' + t)));"
        )
        assert minted.startswith("421 ") and '"token"' not in minted

        form = (
            f"<form id=f method=post action='{console}/console/token' enctype='text/plain' target=out>"
            '<input name=\'{"user_id":"10002","x":"\' value=\'"}\'></form><iframe name=out></iframe>'
            "<script>document.getElementById('f').submit()</script>"
        )
        with hostile_page(form) as site:
            attacker.get(site)
            attacker.switch_to.frame(until(lambda: attacker.find_element(By.NAME, "out"), what="the form's answer"))
            answer = until(lambda: attacker.find_element(By.TAG_NAME, "body").text, what="the console's answer")
            assert "another origin" in answer and '"token"' not in answer
    finally:
        attacker.quit()


def test_operate_a_service_is_paused_and_resumed_on_the_page_found_by_the_search_box_and_both_acts_are_audited(
    cloud: LocalCloudProcess, console: str, browser: WebDriver
) -> None:
    service = f"steer-{secrets.token_hex(3)}"
    panel(browser, console, "operate")
    fill(browser, "operator-name", "Bo")
    browser.find_element(By.CSS_SELECTOR, "#operator-form button[type=submit]").click()
    fill(browser, "pause-service", service)
    fill(browser, "pause-note", "chat move")
    browser.find_element(By.CSS_SELECTOR, "#pause-form button[type=submit]").click()
    paused = until(
        lambda: next(r for r in browser.find_elements(By.CSS_SELECTOR, "#pauses tbody tr") if service in r.text),
        what="the pause listed",
    )
    assert "Bo" in paused.text and "chat move" in paused.text
    paused.find_element(By.TAG_NAME, "button").click()
    until(
        lambda: not [r for r in browser.find_elements(By.CSS_SELECTOR, "#pauses tbody tr") if service in r.text],
        what="the pause gone after Resume",
    )
    fill(browser, "find-id", f"cfm_{secrets.token_hex(16)}")
    browser.find_element(By.CSS_SELECTOR, "#find-form button[type=submit]").click()
    until(lambda: "Nothing Herald recorded" in browser.find_element(By.ID, "find-result").text, what="the search")
    browser.find_element(By.ID, "tab-audit").click()
    fill(browser, "audit-actor", "console (Bo)")

    def audited() -> list[str]:
        texts = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#audit-records tbody tr")]
        return [t for t in texts if f"service#{service}" in t]

    acts = until(lambda: len(audited()) == 2 and audited(), what="both acts in the Audit tab")
    assert "console: resume" in acts[0] and "console: pause" in acts[1] and "note=chat move" in acts[1]


def test_the_api_reference_tries_a_call_with_the_key_the_page_asks_for_and_shows_the_answer(
    cloud: LocalCloudProcess, browser: WebDriver
) -> None:
    """Issue 49, item 5: the reference page's own script runs under its CSP (allowed by its hash) and calls this
    API with the key typed into it; its tables and anchors are there in a real browser."""
    service = f"docs-{secrets.token_hex(3)}"
    key = service_key(cloud, service, "/events/external")["Authorization"].removeprefix("Bearer ")
    browser.get(f"{cloud.http_url}/api/v1/docs#identity.whoami")
    operation = until(lambda: browser.find_element(By.ID, "identity.whoami"), what="the whoami operation")
    fill(browser, "token", key)
    browser.find_element(By.TAG_NAME, "h1").click()  # the key is kept on change
    operation.find_element(By.XPATH, ".//summary[text()='Try it']").click()
    operation.find_element(By.CSS_SELECTOR, "form.try button[type=submit]").click()

    def answered() -> str:
        shown = str(operation.find_element(By.TAG_NAME, "output").text)
        return shown if shown.startswith("200") else ""

    answer = until(answered, what="the answer")
    assert f'"service_id": "{service}"' in answer
    fields = [cell.text for cell in browser.find_elements(By.CSS_SELECTOR, "[id='inbox.record'] table td code")]
    assert "title" in fields and "payload" in fields  # the body's fields, as a table


def test_sessions_an_agents_approval_is_shown_pending_then_decided_by_whom_after_its_card_is_accepted_in_the_im(
    cloud: LocalCloudProcess, console: str, browser: WebDriver
) -> None:
    session, member = f"s-{secrets.token_hex(3)}", new_user()
    engine = service_key(cloud, f"engine-{secrets.token_hex(3)}", "/internal/v1/sessions")
    body = {"members": {member: "developer"}, "agents": ["po"], "status": "active"}
    assert httpx.put(f"{cloud.http_url}/internal/v1/sessions/{session}", json=body, headers=engine).is_success
    as_member = {"Authorization": f"Bearer {make_token(member)}"}
    posted = httpx.post(
        f"{cloud.http_url}/api/v1/sessions/{session}/agents/po/messages", json={"text": "ship"}, headers=as_member
    )
    assert posted.status_code == 202, posted.text
    events = httpx.get(f"{cloud.http_url}/api/v1/sessions/{session}/events", headers=as_member).json()["data"]
    (turn,) = [e["data"]["turn_id"] for e in events["events"] if e["type"] == "turn.started"]
    asked = httpx.post(
        f"{cloud.http_url}/internal/v1/sessions/{session}/agents/po/turns/{turn}/approvals",
        json={"approval_id": "ap-1", "user_id": member, "text": "Ship build 7?"},
        headers=engine,
    )
    assert asked.status_code == 201, asked.text

    def show_the_session() -> None:
        panel(browser, console, "sessions")
        fill(browser, "session-id", session)
        fill(browser, "session-user", member)
        browser.find_element(By.CSS_SELECTOR, "#sessions-form button[type=submit]").click()

    show_the_session()

    def approval() -> str:
        return str(browser.find_element(By.CSS_SELECTOR, '#session-approvals li[data-approval="ap-1"]').text)

    until(lambda: f"asked {member}" in approval() and "pending" in approval(), what="the pending approval")
    panel(browser, console, "im")
    fill(browser, "im-a", "po")
    fill(browser, "im-b", member)
    card: WebElement = until(lambda: browser.find_element(By.CSS_SELECTOR, "li.confirm"), what="the approval card")
    assert "Ship build 7?" in card.text
    click(lambda: card.find_element(By.CSS_SELECTOR, 'button[data-action="accept"]'), what="Approve")
    until(lambda: browser.find_element(By.CSS_SELECTOR, "li.confirm.done"), what="the greyed approval card")
    show_the_session()
    until(lambda: f"approved by {member}" in approval(), what="the decision, by whom")
