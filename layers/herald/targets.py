"""Where a partner service's external events may go, and in what order (contract §3): below both the keys that
grant them (auth) and the events that use them (events), so neither has to import the other for them."""

# The kinds of Feishu receiver an event may target (the `receive_id_type` of im/v1/messages).
RECEIVE_ID_TYPES = frozenset({"open_id", "user_id", "union_id", "email", "chat_id"})

# How a service's external events are ordered: one lane for the whole service (the default), or one lane per
# target, lanes in parallel (opted into per key: `herald-ops keys create --order target`).
SERVICE_ORDER = "service"
TARGET_ORDER = "target"
EVENT_ORDERS = (SERVICE_ORDER, TARGET_ORDER)
