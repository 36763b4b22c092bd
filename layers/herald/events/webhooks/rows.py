"""The events table's status-webhook items, as a PynamoDB model:

* `pk = HOOK#<service>#<tenant>, sk = HOOK` — a service's status webhook for one tenant: its URL, the statuses it
  asks for and its signing secrets (the current one, and the one a rotation replaced while the overlap lasts).
"""

from __future__ import annotations

from pynamodb.attributes import UnicodeAttribute, UnicodeSetAttribute
from pynamodb.models import Model

from herald.tables import IntAttribute

HOOK = "HOOK"
WEBHOOK_ITEM = "webhook"


class WebhookRow(Model):
    """ExternalEventsTable, a status webhook."""

    pk = UnicodeAttribute(hash_key=True)  # HOOK#<service>#<tenant>
    sk = UnicodeAttribute(range_key=True, default=HOOK)
    item_type = UnicodeAttribute(default=WEBHOOK_ITEM)
    service_id = UnicodeAttribute()
    tenant = UnicodeAttribute(null=True)  # absent: events accepted for the stack's apps
    url = UnicodeAttribute()
    statuses = UnicodeSetAttribute()
    secret = UnicodeAttribute()
    previous_secret = UnicodeAttribute(null=True)
    previous_secret_until_ms = IntAttribute(null=True)
    created_at_ms = IntAttribute()
    updated_at_ms = IntAttribute()


def webhook_pk(service_id: str, tenant: str) -> str:
    return f"HOOK#{service_id}#{tenant}"
