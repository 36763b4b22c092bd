"""The inbox service's part."""

from herald.container import Container, part
from herald.inbox.dynamo import DynamoInboxStore
from herald.inbox.service import Inbox


@part
def inbox(c: Container) -> Inbox:
    return Inbox(DynamoInboxStore(c.settings.inbox_table, c.clients.dynamodb), clock=c.clock)
