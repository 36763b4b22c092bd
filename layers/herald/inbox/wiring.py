"""Builds the inbox service from settings, once per process."""

from functools import lru_cache

from herald.inbox.dynamo import DynamoInboxStore
from herald.inbox.service import Inbox
from herald.settings import get_settings


@lru_cache(maxsize=1)
def inbox() -> Inbox:
    return Inbox(DynamoInboxStore(get_settings().inbox_table))
