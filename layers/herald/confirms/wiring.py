"""Builds the confirm services from settings, once per process. Businesses are registered here."""

from functools import lru_cache

from herald.confirms.businesses import BusinessRegistry
from herald.confirms.delivery import ConfirmDelivery
from herald.confirms.dynamo import DynamoConfirmStore, DynamoDeliveryStore
from herald.confirms.role_invitation import RoleInvitationBusiness
from herald.confirms.service import Confirms
from herald.confirms.sqs import SqsPushQueue
from herald.invitations.wiring import invitations
from herald.providers.tencent_im import TencentImClient
from herald.secrets import secret_source
from herald.settings import get_settings


@lru_cache(maxsize=1)
def confirms() -> Confirms:
    settings = get_settings()
    registry = BusinessRegistry([RoleInvitationBusiness(invitations())])
    return Confirms(DynamoConfirmStore(settings.confirms_table), registry, lease_ms=settings.confirm_lease_ms)


@lru_cache(maxsize=1)
def push_queue() -> SqsPushQueue:
    return SqsPushQueue(get_settings().im_push_queue_url)


@lru_cache(maxsize=1)
def deliveries() -> DynamoDeliveryStore:
    return DynamoDeliveryStore(get_settings().deliveries_table)


@lru_cache(maxsize=1)
def delivery() -> ConfirmDelivery:
    settings = get_settings()
    im = TencentImClient(
        base_url=settings.tencent_im_base_url,
        sdk_app_id=settings.tencent_im_sdk_app_id,
        admin_identifier=settings.tencent_im_admin_identifier,
        secret_key=secret_source(
            settings.tencent_im_secret_key, settings.tencent_im_secret_key_parameter, "Tencent IM secret key"
        ),
    )
    return ConfirmDelivery(
        DynamoConfirmStore(settings.confirms_table), deliveries(), im, max_attempts=settings.im_push_max_attempts
    )
