"""TenantsTable: one item a tenant, its providers as attributes (names of SSM parameters, never secrets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pynamodb.attributes import BooleanAttribute, UnicodeAttribute

from herald.tables import Database, IntAttribute
from herald.tenants.models import FeishuApp, Tenant, TencentImApp

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

from pynamodb.models import Model


class TenantRow(Model):
    app_code = UnicodeAttribute(hash_key=True)
    display_name = UnicodeAttribute(null=True)
    enabled = BooleanAttribute()
    tim_sdk_app_id = IntAttribute(null=True)
    tim_admin = UnicodeAttribute(null=True)
    tim_secret_parameter = UnicodeAttribute(null=True)
    tim_base_url = UnicodeAttribute(null=True)
    feishu_app_id = UnicodeAttribute(null=True)
    feishu_secret_parameter = UnicodeAttribute(null=True)
    feishu_base_url = UnicodeAttribute(null=True)
    updated_at_ms = IntAttribute()
    share_weight = IntAttribute(null=True)  # absent: 1

    def tenant(self) -> Tenant:
        im = (
            TencentImApp(
                self.tim_sdk_app_id, self.tim_admin or "", self.tim_secret_parameter or "", self.tim_base_url or ""
            )
            if self.tim_sdk_app_id
            else None
        )
        feishu = (
            FeishuApp(self.feishu_app_id, self.feishu_secret_parameter or "", self.feishu_base_url or "")
            if self.feishu_app_id
            else None
        )
        return Tenant(
            self.app_code,
            self.display_name or "",
            bool(self.enabled),
            im,
            feishu,
            self.updated_at_ms,
            self.share_weight or 1,
        )


class DynamoTenantStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._rows = Database(client).bind(TenantRow, table_name)

    def get(self, app_code: str) -> Tenant | None:
        try:
            return self._rows.get(app_code, consistent_read=True).tenant()
        except self._rows.DoesNotExist:
            return None

    def put(self, tenant: Tenant) -> None:
        im, feishu = tenant.tencent_im, tenant.feishu
        self._rows(
            app_code=tenant.app_code,
            display_name=tenant.display_name or None,
            enabled=tenant.enabled,
            tim_sdk_app_id=im.sdk_app_id if im else None,
            tim_admin=im.admin_identifier if im else None,
            tim_secret_parameter=im.secret_parameter if im else None,
            tim_base_url=(im.base_url or None) if im else None,
            feishu_app_id=feishu.app_id if feishu else None,
            feishu_secret_parameter=feishu.secret_parameter if feishu else None,
            feishu_base_url=(feishu.base_url or None) if feishu else None,
            updated_at_ms=tenant.updated_at_ms,
            share_weight=None if tenant.weight == 1 else tenant.weight,
        ).save()

    def all(self) -> list[Tenant]:
        return [row.tenant() for row in self._rows.scan()]
