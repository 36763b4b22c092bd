// The Herald console. Plain DOM, no build step; every value from Herald or a fake is set as text, never HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const tokens = new Map(); // user id -> JWT the console minted (local cloud)
let config = {};

// Much of what the console shows was sent by a caller (a partner's event type, a title, a provider's reason):
// every character that is not printable (controls, direction overrides, zero-width and separator characters
// other than the space) is shown as its escape, as herald-ops prints it, so none can reorder or hide text.
const NOT_PRINTABLE = /(?! )[\p{C}\p{Z}]/gu;
const ESCAPES = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

function printable(text) {
  return String(text).replace(NOT_PRINTABLE, (char) => {
    const code = char.codePointAt(0);
    const hex = (width) => code.toString(16).padStart(width, "0");
    return ESCAPES[char] || (code < 0x100 ? `\\x${hex(2)}` : code < 0x10000 ? `\\u${hex(4)}` : `\\U${hex(8)}`);
  });
}

// JSON for people: its strings printable, its own layout kept.
const printableJson = (value) => JSON.stringify(value, (_, v) => (typeof v === "string" ? printable(v) : v), 2);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) {
      const type = key.slice(2); // dispatched through node.handlers, so a redraw can hand the node newer ones
      node.handlers = { ...node.handlers, [type]: value };
      node.addEventListener(type, (event) => node.handlers[type](event));
    }
    else if (value !== false && value !== undefined) node.setAttribute(key, value === true ? "" : printable(value));
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(printable(child)));
  return node;
}

// The refresh loop redraws every second; replacing a row between a press and its release would swallow the
// click, so a redraw changes the nodes already shown in place (text, attributes, handlers) and replaces only
// what changed shape.
function fill(list, nodes, empty) {
  morphChildren(list, nodes.length ? nodes : [empty]);
}

function morphChildren(parent, nodes) {
  const shown = [...parent.childNodes];
  nodes.forEach((node, i) => (i < shown.length ? morph(shown[i], node) : parent.append(node)));
  for (const extra of shown.slice(nodes.length)) extra.remove();
}

function morph(shown, next) {
  const sameHandlers = Object.keys(shown.handlers || {}).join() === Object.keys(next.handlers || {}).join();
  if (shown.nodeName !== next.nodeName || !sameHandlers) return shown.replaceWith(next);
  if (shown.nodeType === Node.TEXT_NODE) {
    if (shown.data !== next.data) shown.data = next.data;
    return;
  }
  for (const { name } of [...shown.attributes]) if (!next.hasAttribute(name)) shown.removeAttribute(name);
  for (const { name, value } of [...next.attributes]) if (shown.getAttribute(name) !== value) shown.setAttribute(name, value);
  if (next.handlers) shown.handlers = next.handlers;
  morphChildren(shown, [...next.childNodes]);
}

// Times as herald-ops prints them: local time (with the date when not today) and how long ago or how soon.
function age(seconds) {
  const s = Math.abs(seconds);
  if (s < 60) return `${Math.round(s)} s`;
  const minutes = Math.floor(s / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
}

function when(ms) {
  if (ms == null) return "";
  const at = new Date(ms);
  const today = at.toDateString() === new Date().toDateString();
  const shown = today ? at.toLocaleTimeString() : at.toLocaleString();
  const delta = (Date.now() - ms) / 1000;
  return delta >= 0 ? `${shown} (${age(delta)} ago)` : `${shown} (in ${age(delta)})`;
}

function say(target, text, error = false) {
  target.textContent = printable(text);
  target.classList.toggle("error", error);
}

async function json(url, options = {}) {
  // Every change carries the token this console gave the page (its own origin only: see guard in app.py).
  const response = await fetch(url, {
    ...options,
    headers: {
      "content-type": "application/json",
      "x-herald-console-token": config.page_token || "",
      ...(options.headers || {}),
    },
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const why = body.message || body.error || body.detail || response.statusText;
    throw new Error(`${response.status}: ${typeof why === "string" ? why : JSON.stringify(why)}`);
  }
  return body;
}

const post = (url, body = {}) => json(url, { method: "POST", body: JSON.stringify(body) });

async function tokenOf(user) {
  if (!tokens.has(user)) tokens.set(user, (await post("/console/token", { user_id: user })).token);
  return tokens.get(user);
}

// The real HTTP API as one app user; the envelope's data, or an Error with its code and reason.
async function asUser(user, method, path, body) {
  const headers = { authorization: `Bearer ${await tokenOf(user)}` };
  const options = { method, headers, body: body === undefined ? undefined : JSON.stringify(body) };
  return (await json(`/console/app/${path}`, options)).data;
}

function commandId() {
  return `console-${Date.now()}-${Math.random().toString(16).slice(2, 8)}`;
}

// ---------------------------------------------------------------- tabs (arrow keys move between them)
const tabs = [...document.querySelectorAll('[role="tab"]')];
function show(tab) {
  for (const other of tabs) {
    const selected = other === tab;
    other.setAttribute("aria-selected", String(selected));
    other.tabIndex = selected ? 0 : -1;
    $(other.getAttribute("aria-controls")).hidden = !selected;
  }
  tab.focus();
  refresh();
}
tabs.forEach((tab) => {
  tab.addEventListener("click", () => show(tab));
  tab.addEventListener("keydown", (event) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (step) show(tabs[(tabs.indexOf(tab) + step + tabs.length) % tabs.length]);
  });
});

// ---------------------------------------------------------------- IM
function confirmCard(message, update, viewer) {
  const data = message.data;
  const done = update !== undefined;
  const state = done ? update.data.status : data.status;
  const receiverOnly = !done && message.to !== viewer;
  const buttons = (data.actions || []).map((action) =>
    el(
      "button",
      {
        class: action.style,
        disabled: done || message.to !== viewer,
        "data-action": action.action,
        onclick: () => act(data.confirm_id, action.action, message.to),
      },
      action.label,
    ),
  );
  return el(
    "li",
    { class: `confirm${done ? " done" : ""}`, "data-confirm": data.confirm_id, "data-state": state },
    el("div", { class: "from" }, `${message.from} → ${message.to} · ${data.business_type}/${data.business_subtype}`),
    el("div", {}, data.msg),
    el("div", { class: "state" }, done ? `${state} · ${when(update.received_at_ms)}` : state),
    el("div", { class: "from times" }, `sent ${when(data.created_at_ms)} · expires ${when(data.expire_at_ms)}`),
    el("div", { class: "actions" }, ...buttons),
    receiverOnly
      ? el(
          "div",
          { class: "hint who-acts" },
          `Only ${message.to}, the receiver, may act on it. `,
          el("button", { class: "link", onclick: () => viewAs(message.to, message.from) }, `View as ${message.to}`),
        )
      : "",
  );
}

function viewAs(viewer, other) {
  $("im-a").value = other;
  $("im-b").value = viewer;
  refresh();
}

async function act(confirmId, action, user) {
  try {
    const confirm = await asUser(user, "POST", `api/v1/message/action-confirms/${confirmId}/${action}`, {
      command_id: commandId(),
    });
    say($("im-status"), `${action}: the API answered ${confirm.status}; the card greys when the IM update arrives`);
  } catch (error) {
    say($("im-status"), `${action}: ${error.message}`, true);
  }
}

async function refreshIm() {
  const a = $("im-a").value.trim();
  const b = $("im-b").value.trim();
  if (!a || !b) return;
  const messages = await json(`/console/im?a=${encodeURIComponent(a)}&b=${encodeURIComponent(b)}`);
  const updates = new Map();
  for (const m of messages) if (m.data && m.data.type === "im_confirm_update") updates.set(m.data.confirm_id, m);
  const items = messages
    .filter((m) => !(m.data && m.data.type === "im_confirm_update"))
    .map((m) =>
      m.data && m.data.type === "im_confirm"
        ? confirmCard(m, updates.get(m.data.confirm_id), b)
        : el("li", {}, el("div", { class: "from" }, `${m.from} → ${m.to} · ${when(m.received_at_ms)}`), JSON.stringify(m.data)),
    );
  fill($("im-messages"), items, el("li", { class: "empty" }, `No messages between ${a} and ${b} yet.`));
}

// ---------------------------------------------------------------- Inbox
let socket = null;
let inboxUser = null;
let inboxVersion = -1;

async function openBell(event) {
  event.preventDefault();
  say($("inbox-status"), "");
  inboxUser = $("inbox-user").value.trim();
  inboxVersion = -1;
  if (socket) socket.close();
  const token = await tokenOf(inboxUser);
  socket = new WebSocket(`${config.ws_url}/?token=${encodeURIComponent(token)}`);
  socket.onopen = () => say($("inbox-socket"), `connected as ${inboxUser}`);
  socket.onclose = () => say($("inbox-socket"), "disconnected", true);
  socket.onmessage = (message) => {
    const frame = JSON.parse(message.data);
    if (frame.type === "inbox_updated" && frame.version > inboxVersion) {
      inboxVersion = frame.version;
      $("inbox-count").textContent = frame.unreadCount;
      refreshInbox();
    }
  };
  $("inbox-read-all").disabled = false;
  const count = await asUser(inboxUser, "GET", "api/v1/inbox/unread-count");
  if (inboxVersion < 0) $("inbox-count").textContent = count.unread_count;
  await refreshInbox();
  await showPreferences();
}

async function refreshInbox() {
  if (!inboxUser) return;
  const page = await asUser(inboxUser, "GET", "api/v1/inbox/notifications?page_size=50");
  const items = page.items.map((n) =>
    el(
      "li",
      { class: n.is_read ? "" : "unread", "data-notification": n.notification_id },
      el("div", { class: "from" }, `${n.kind} · ${n.session_id} · ${when(n.created_at_ms)}`),
      el("div", {}, n.title),
      el(
        "div",
        { class: "actions" },
        el("button", { disabled: n.is_read, onclick: () => inboxChange("POST", `${n.notification_id}/read`) }, "Read"),
        el("button", { onclick: () => inboxChange("DELETE", n.notification_id) }, "Delete"),
      ),
    ),
  );
  fill($("inbox-items"), items, el("li", { class: "empty" }, "No notifications."));
}

async function inboxChange(method, path) {
  try {
    await asUser(inboxUser, method, `api/v1/inbox/notifications/${path}`);
  } catch (error) {
    say($("inbox-status"), error.message, true);
  }
  await refreshInbox(); // the count itself comes over the WebSocket
}

async function showPreferences() {
  const prefs = await asUser(inboxUser, "GET", "api/v1/inbox/preferences");
  const box = $("inbox-prefs");
  box.replaceChildren(el("legend", {}, "Preferences"));
  for (const [name, on] of Object.entries(prefs)) {
    const input = el("input", { type: "checkbox", checked: on, id: `pref-${name}` });
    input.addEventListener("change", () =>
      asUser(inboxUser, "PUT", "api/v1/inbox/preferences", { [name]: input.checked }).catch((error) =>
        say($("inbox-status"), error.message, true),
      ),
    );
    box.append(el("label", {}, input, ` ${name} `));
  }
  box.disabled = false;
}

// ---------------------------------------------------------------- Partner cards
async function refreshCards() {
  const cards = await json("/console/feishu");
  const items = cards.map((card) =>
    el(
      "li",
      { "data-message": card.message_id, "data-revision": card.revision ?? "" },
      el("div", { class: "from" }, `chat ${card.chat} · ${card.message_id}`),
      el("div", {}, el("b", {}, card.title), ` — revision ${card.revision ?? "?"}`),
      el("div", {}, (card.card.elements || []).map((e) => (e.text ? e.text.content : "")).join(" ")),
      el("div", { class: "state card-status" }, card.status),
      el(
        "ol",
        { class: "history" },
        ...card.history.map((h) => el("li", {}, `${h.op} ${when(h.at_ms)}: ${h.title} · ${h.status} · ${h.summary}`)),
      ),
    ),
  );
  fill($("cards-list"), items, el("li", { class: "empty" }, "No cards yet: post an external event."));
}

// ---------------------------------------------------------------- Agent sessions
async function refreshSession(event) {
  if (event) event.preventDefault();
  const session = $("session-id").value.trim();
  const user = $("session-user").value.trim();
  if (!session || !user) return;
  const tbody = $("session-messages").tBodies[0];
  try {
    const page = await asUser(user, "GET", `api/v1/sessions/${encodeURIComponent(session)}/events?after_seq=0`);
    const messages = new Map();
    const agents = new Map(); // agent -> its last turn event
    const mark = (id, change) => messages.set(id, { ...(messages.get(id) || { id }), ...change });
    const turnMessages = new Map(); // turn id -> the messages it carries
    const approvals = new Map(); // approval id -> who was asked, and its decision once there is one
    const at = (e) => (e.at_ms ? ` · ${when(e.at_ms)}` : "");
    for (const e of page.events) {
      const d = e.data || {};
      if (e.type === "chat.message") mark(d.message_id, { agent: d.agent, sender: e.actor, text: d.text, state: "sent" });
      if (e.type === "chat.message_queued") mark(d.message_id, { state: `queued (position ${d.position})` });
      if (e.type === "chat.message_cancelled") mark(d.message_id, { state: "cancelled" });
      if (e.type === "agent.error") mark(d.message_id, { state: `refused: ${d.reason}` });
      if (e.type === "turn.started") {
        turnMessages.set(d.turn_id, d.message_ids || []);
        for (const id of d.message_ids || []) mark(id, { state: `started (${d.turn_id})${at(e)}` });
      }
      if (e.type === "turn.finished") for (const id of turnMessages.get(d.turn_id) || []) mark(id, { state: `finished (${d.turn_id})${at(e)}` });
      if (e.type === "chat.message_delivered") for (const id of d.message_ids || []) mark(id, { state: "delivered" });
      if (e.type.startsWith("turn.")) agents.set(d.agent, `${e.type} ${d.turn_id || ""}`.trim());
      if (e.type === "approval.requested") approvals.set(d.approval_id, { ...d, asked_at_ms: e.at_ms });
      if (e.type === "approval.decided") approvals.set(d.approval_id, { ...approvals.get(d.approval_id), ...d });
    }
    const turn = [...agents].map(([agent, last]) => `${agent}: ${last}`).join("; ") || "no turn yet";
    say($("session-status"), `${page.events.length} events · ${turn}`);
    const who = await json(`/console/sessions/${encodeURIComponent(session)}`);
    const members = Object.entries(who.members).map(([id, role]) => `${id} (${role})`).join(", ");
    const states = who.agents.map((a) => `${a.agent}: ${a.state}${a.waiting ? `, ${a.waiting} waiting` : ""}`);
    $("session-who").textContent = `${who.status} · members ${members} · agents ${states.join("; ")}`;
    const rows = [...messages.values()].map((m) =>
      el(
        "tr",
        {},
        el("td", {}, m.id),
        el("td", {}, m.agent || ""),
        el("td", {}, m.sender),
        el("td", {}, m.state),
        el("td", {}, m.text),
        el(
          "td",
          {},
          m.sender === user && /queued/.test(m.state)
            ? el("button", { onclick: () => cancelMessage(session, m, user) }, "Cancel")
            : "",
        ),
      ),
    );
    fill(tbody, rows, el("tr", {}, el("td", { class: "empty", colspan: 6 }, "No messages.")));
    fill($("session-approvals"), [...approvals.values()].map(approvalItem), el("li", { class: "empty" }, "No approvals."));
  } catch (error) {
    say($("session-status"), error.message, true);
  }
}

// An approval an agent asked for: whom, from which turn, and what became of it (by whom, when).
function approvalItem(a) {
  const state = a.decision
    ? `${a.decision} by ${a.decided_by} · ${when(a.decided_at_ms)}${a.reason ? ` · "${a.reason}"` : ""}`
    : `pending (asked ${when(a.asked_at_ms)}, expires ${when(a.expire_at_ms)})`;
  return el(
    "li",
    { "data-approval": a.approval_id },
    el("div", { class: "from" }, `${a.agent} · turn ${a.turn_id} · confirm ${a.confirm_id || "?"}`),
    el("div", {}, el("b", {}, `approval ${a.approval_id}`), ` asked ${a.user_id || "?"}`),
    el("div", { class: "state" }, state),
  );
}

async function cancelMessage(session, message, user) {
  try {
    await asUser(user, "POST", `api/v1/sessions/${session}/agents/${message.agent}/messages/${message.id}/cancel`);
  } catch (error) {
    say($("session-status"), error.message, true);
  }
  refreshSession();
}

// ---------------------------------------------------------------- Operate
function row(cells, action) {
  return el("tr", {}, ...cells.map((c) => el("td", {}, c ?? "")), el("td", {}, action || ""));
}

function rows(table, items, empty) {
  const columns = table.tHead.rows[0].cells.length;
  fill(table.tBodies[0], items, el("tr", {}, el("td", { class: "empty", colspan: columns }, empty)));
}

async function operateStep(label, call) {
  try {
    const answer = await call();
    say($("operate-status"), `${label}: done`);
    return answer;
  } catch (error) {
    say($("operate-status"), `${label}: ${error.message}`, true);
    return null;
  } finally {
    refreshOperate();
  }
}

// An id shown short (its start and end), whole on hover, copied on a click.
function shortId(id) {
  const text = String(id ?? "");
  const shown = text.length > 18 ? `${text.slice(0, 10)}…${text.slice(-6)}` : text;
  return el("code", { class: "id", title: `${text} (click to copy)`, onclick: () => navigator.clipboard?.writeText(text) }, shown);
}

const OPERATOR = "herald.console.operator";

function operatorName() {
  // Asked once, kept in this browser: every act here is recorded with it.
  const name = localStorage.getItem(OPERATOR) || "";
  if (!name) {
    say($("operate-status"), "Say who you are first: your name is recorded with every act here.", true);
    $("operator-name").focus();
  }
  return name;
}

function keepOperator(event) {
  event.preventDefault();
  const name = $("operator-name").value.trim();
  if (!name) return;
  localStorage.setItem(OPERATOR, name);
  say($("operate-status"), `Acts here are recorded as ${name}.`);
}

async function dlqDetail(name, step) {
  $("dlq-detail-title").textContent = `${step === "redrive" ? "Redrive" : "Peek"}: ${name}`;
  $("dlq-detail").hidden = false;
  $("redrive-form").hidden = true;
  if (step === "redrive") {
    const plan = await post(`/console/dlq/${name}/plan`);
    const groups = Object.keys(plan.groups ?? {}).length;
    $("redrive-plan").textContent = `${plan.depth ?? 0} message(s) in ${groups} group(s) go back to their queue, each group in its order.`;
    $("redrive-form").dataset.queue = name;
    $("redrive-confirm").value = "";
    $("redrive-form").hidden = false;
    $("redrive-confirm").focus();
  }
  const peeked = await post(`/console/dlq/${name}/peek`);
  rows(
    $("dlq-messages"),
    (peeked.messages ?? []).map((m) =>
      el("tr", {}, el("td", {}, shortId(m.message_id)), el("td", {}, shortId(m.group)), el("td", {}, when(m.sent_at_ms)),
        el("td", {}, m.receive_count), el("td", {}, m.failure_reason ?? ""), el("td", { title: m.body }, String(m.body).slice(0, 120))),
    ),
    "No message in this queue.",
  );
}

async function redriveConfirmed(event) {
  event.preventDefault();
  const name = $("redrive-form").dataset.queue;
  if ($("redrive-confirm").value.trim() !== name) return say($("operate-status"), `redrive: type ${name} to move them back`, true);
  $("redrive-form").hidden = true;
  const answer = await operateStep(`redrive ${name}`, () => post(`/console/dlq/${name}/redrive`, { confirm: name, by: operatorName() }));
  if (answer) say($("operate-status"), `redrive ${name}: ${answer.moved ?? 0} moved`);
}

let resolving = null; // the blocked job the resolve form is open for

function resolveJob(job) {
  if (!operatorName()) return;
  resolving = job;
  $("resolve-title").textContent = `Resolve ${printable(job.job_id)}`;
  $("resolve-why").textContent = printable(`lane ${job.lane}, ${job.status}: ${job.why ?? ""}`);
  $("resolve-message-id").value = "";
  $("resolve-note").value = "";
  $("resolve-form").hidden = false;
  $("resolve-form").querySelector("input[name=resolve-action]").focus();
}

async function resolveSubmitted(event) {
  event.preventDefault();
  const action = $("resolve-form").querySelector("input[name=resolve-action]:checked").value;
  const messageId = $("resolve-message-id").value.trim();
  if (action === "sent" && !messageId) return say($("operate-status"), "sent: give the Feishu message id it arrived as", true);
  const job = resolving;
  $("resolve-form").hidden = true;
  await operateStep(`${action} ${job.job_id}`, () =>
    post(`/console/events/${encodeURIComponent(job.job_id)}/resolve`, { action, message_id: messageId, note: $("resolve-note").value, by: operatorName() }),
  );
}

let repairing = null;

function repairConfirm(confirm) {
  if (!operatorName()) return;
  repairing = confirm;
  $("repair-what").textContent = printable(`Settle ${confirm.confirm_id} (${confirm.app_code}) from its owner now and resend its failed pushes?`);
  $("repair-form").hidden = false;
}

async function repairSubmitted(event) {
  event.preventDefault();
  const c = repairing;
  $("repair-form").hidden = true;
  await operateStep(`repair ${c.confirm_id}`, () => post(`/console/confirms/${c.app_code}/${c.confirm_id}/repair`, { by: operatorName() }));
}

function showTimeline(job) {
  // Each call the job made to Feishu, oldest first, then what Herald or an operator did with it.
  const list = $("job-timeline");
  const calls = (job.calls ?? []).map((c) =>
    `${when(c.at_ms)}  ${c.operation} via ${c.app_id}: ${c.outcome}${c.code ? ` (Feishu ${c.code})` : ""}` +
      `${c.message_id ? ` → ${c.message_id}` : ""}`,
  );
  const resolved = (job.resolutions ?? []).map((r) => `${when(r.at_ms)}  ${r.action} by ${r.by}${r.note ? `: ${r.note}` : ""}`);
  list.replaceChildren(...[...calls, ...resolved].map((line) => el("li", {}, printable(line))));
  if (!list.children.length) list.append(el("li", {}, "No call to Feishu yet."));
  $("job-timeline-title").textContent = `Timeline of ${printable(job.job_id)}`;
  $("job-timeline-box").hidden = false;
}

const selectedJobs = new Map(); // job id -> its service: the blocked jobs ticked for a bulk resolution

async function resolveSelected() {
  const by = operatorName();
  if (!by) return;
  const action = $("resolve-selected-action").value;
  const byService = new Map();
  for (const [job, service] of selectedJobs) byService.set(service, [...(byService.get(service) ?? []), job]);
  for (const [service, jobIds] of byService) {
    const { plan } = await post("/console/events/resolve-many", { service, action, job_ids: jobIds });
    const lines = plan.map((j) => `${j.job_id} (${j.status}) → ${j.becomes}`).join("\n");
    if (!plan.length || !window.confirm(`${service}: ${action} these ${plan.length} job(s), lane by lane?\n${printable(lines)}`)) continue;
    await operateStep(`${action} ${plan.length} job(s) of ${service}`, () =>
      post("/console/events/resolve-many", { service, action, job_ids: jobIds, execute: true, note: "from the console", by }),
    );
  }
  selectedJobs.clear();
}

async function findAnything(event) {
  event.preventDefault();
  const params = new URLSearchParams({ id: $("find-id").value.trim() });
  if ($("find-service").value.trim()) params.set("service", $("find-service").value.trim());
  const found = await json(`/console/find?${params}`);
  const list = $("find-result");
  list.replaceChildren(
    ...found.map((f) =>
      el("li", {}, printable(`${f.kind} ${f.key}${f.status ? ` (${f.status})` : ""}`),
        el("ul", {}, ...f.timeline.map((m) => el("li", {}, printable(`${when(m.at_ms)}  ${m.what}`))))),
    ),
  );
  if (!found.length) list.append(el("li", {}, "Nothing Herald recorded is known by this id."));
  list.hidden = false;
}

async function pauseSomething(event) {
  event.preventDefault();
  const by = operatorName();
  if (!by) return;
  const value = (id) => $(id).value.trim() || null;
  const body = { what: $("pause-what").value, service: value("pause-service"), target: value("pause-target"),
    tenant: value("pause-tenant"), note: $("pause-note").value, by };
  await operateStep("pause", () => post("/console/pauses", body));
}

async function refreshAudit() {
  const params = new URLSearchParams();
  if ($("audit-verb").value.trim()) params.set("verb", $("audit-verb").value.trim());
  if ($("audit-actor").value.trim()) params.set("actor", $("audit-actor").value.trim());
  const records = await json(`/console/audit?${params}`);
  rows(
    $("audit-records"),
    records.map((r) => el("tr", {}, ...[when(r.at_ms), r.actor, r.verb, r.target, r.outcome,
      Object.entries(r.arguments).map(([k, v]) => `${k}=${v}`).join(" ")].map((c) => el("td", {}, c ?? "")))),
    "No operator act recorded yet.",
  );
}

async function refreshOperate() {
  const state = await json("/console/operate");
  const pauses = await json("/console/pauses");
  rows(
    $("pauses"),
    pauses.map((p) =>
      row([p.paused, p.by, p.note, when(p.since_ms), p.held],
        el("button", { onclick: () => operatorName() && operateStep(`resume ${p.paused}`, () => post("/console/pauses/resume", { key: p.paused, by: operatorName() })) }, "Resume")),
    ),
    "Nothing paused: every delivery is moving.",
  );
  rows(
    $("dlqs"),
    state.dlqs.map((q) =>
      row([q.dlq, q.depth, q.oldest_age_s == null ? "" : age(q.oldest_age_s), q.kind, q.source ?? ""], el("span", { class: "actions" },
        el("button", { onclick: () => dlqDetail(q.dlq, "peek") }, "Peek"),
        el("button", { onclick: () => dlqDetail(q.dlq, "redrive"), disabled: !q.depth || !q.redrivable }, "Redrive…"),
      )),
    ),
    "No dead-letter queues.",
  );
  rows(
    $("blocked"),
    state.blocked.map((job) =>
      row(
        [job.lane, shortId(job.job_id), job.awaiting_operator ? `${job.status} (yours)` : job.status, job.why, when(job.blocked_at_ms), job.waiting_behind,
          el("input", { type: "checkbox", "aria-label": `select ${job.job_id}`, checked: selectedJobs.has(job.job_id),
            onchange: (e) => (e.target.checked ? selectedJobs.set(job.job_id, job.service_id) : selectedJobs.delete(job.job_id)) })],
        el("span", { class: "actions" },
          el("button", { "data-job": job.job_id, onclick: () => resolveJob(job) }, "Resolve…"),
          el("button", { "data-timeline": job.job_id, onclick: () => showTimeline(job) }, "Timeline"),
        ),
      ),
    ),
    "Nothing blocked.",
  );
  rows(
    $("stuck"),
    state.stuck.map((c) =>
      row(
        [shortId(c.confirm_id), c.status ?? c.push, c.overdue_s == null ? c.why : `${c.why}, ${age(c.overdue_s)} overdue`],
        el("button", { onclick: () => repairConfirm(c) }, "Repair…"),
      ),
    ),
    "Nothing stuck.",
  );
  const app = (a, id) => (typeof a === "string" ? a : `${a[id]} (${a.secret_parameter})`);
  rows(
    $("tenants"),
    state.tenants.map((t) =>
      row([t.app_code, t.display_name, t.enabled ? "enabled" : "disabled", app(t.tencent_im, "sdk_app_id"), app(t.feishu, "app_id")]),
    ),
    "No tenant registered: every app_code uses the stack's providers.",
  );
}

// ---------------------------------------------------------------- refresh loop
const refreshers = {
  im: ["im-status", refreshIm],
  cards: ["cards-status", refreshCards],
  operate: ["operate-status", refreshOperate],
  audit: ["audit-status", refreshAudit],
  sessions: ["session-status", refreshSession],
};
let refreshError = ""; // what the last failed refresh said: taken off the page once a refresh succeeds

async function refresh() {
  const panel = tabs.find((t) => t.getAttribute("aria-selected") === "true").getAttribute("aria-controls");
  if (!refreshers[panel]) return;
  const [statusId, redraw] = refreshers[panel];
  const status = $(statusId);
  try {
    await redraw();
    if (refreshError && status.textContent === refreshError) say(status, "");
    refreshError = "";
  } catch (error) {
    refreshError = error.message;
    say(status, refreshError, true);
  }
}

async function start() {
  config = await json("/console/config");
  $("stack").textContent = config.local ? "local cloud" : `stack ${config.stack}`;
  $("inbox-form").addEventListener("submit", (event) => openBell(event).catch((e) => say($("inbox-status"), e.message, true)));
  $("inbox-read-all").addEventListener("click", () => inboxChange("POST", "read-all"));
  $("sessions-form").addEventListener("submit", refreshSession);
  $("im-form").addEventListener("submit", (event) => { event.preventDefault(); refresh(); });
  $("find-form").addEventListener("submit", (event) => findAnything(event).catch((e) => say($("operate-status"), e.message, true)));
  $("pause-form").addEventListener("submit", pauseSomething);
  $("resolve-selected").addEventListener("click", () => resolveSelected().catch((e) => say($("operate-status"), e.message, true)));
  $("audit-form").addEventListener("submit", (event) => { event.preventDefault(); refresh(); });
  $("operator-name").value = localStorage.getItem(OPERATOR) || "";
  $("operator-form").addEventListener("submit", keepOperator);
  $("resolve-form").addEventListener("submit", (e) => resolveSubmitted(e).catch((err) => say($("operate-status"), err.message, true)));
  $("resolve-cancel").addEventListener("click", () => { $("resolve-form").hidden = true; });
  $("repair-form").addEventListener("submit", (e) => repairSubmitted(e).catch((err) => say($("operate-status"), err.message, true)));
  $("repair-cancel").addEventListener("click", () => { $("repair-form").hidden = true; });
  $("redrive-form").addEventListener("submit", (e) => redriveConfirmed(e).catch((err) => say($("operate-status"), err.message, true)));
  $("redrive-cancel").addEventListener("click", () => { $("redrive-form").hidden = true; });
  if (!config.local) {
    // A deployed stack: its users sign in with its identity provider and its providers are real, so only
    // Operate runs here.
    const kept = ["operate", "audit"];
    for (const tab of tabs) tab.hidden = !kept.includes(tab.getAttribute("aria-controls"));
    for (const section of document.querySelectorAll('[role="tabpanel"]')) section.hidden = !kept.includes(section.id);
    tabs.splice(0, tabs.length, ...tabs.filter((tab) => !tab.hidden));
  }
  const panel = new URLSearchParams(location.search).get("panel");
  show(tabs.find((t) => t.getAttribute("aria-controls") === panel) || tabs[0]);
  setInterval(refresh, 1000);
}

start().catch((error) => say($("im-status"), `the console could not start: ${error.message}`, true));
