"""DynamoDB adapter for owner registrations: OwnersTable, one item per tenant and business type
(`app_code`, `business_type`), its version guarding every change. The table is encrypted at rest (the
template's SSE, with the stack's KMS key where one is given); the signing secrets are never read back out
through a route."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pynamodb.attributes import BooleanAttribute, ListAttribute, UnicodeAttribute, VersionAttribute
from pynamodb.exceptions import DeleteError, PutError
from pynamodb.models import Model

from herald.confirms.owners.models import OwnerSpec, Registration, RegistrationExists, StaleRegistration
from herald.confirms.rows import ButtonMap
from herald.tables import Database, IntAttribute, condition_failed, string_list

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


class RegistrationRow(Model):
    """OwnersTable: a business type an owner service registered in a tenant."""

    app_code = UnicodeAttribute(hash_key=True)
    business_type = UnicodeAttribute(range_key=True)
    service_id = UnicodeAttribute()
    callback_url = UnicodeAttribute()
    fact_url = UnicodeAttribute()
    subtypes = string_list()
    buttons = ListAttribute(of=ButtonMap)
    default_expiry_s = IntAttribute()
    allow_links = BooleanAttribute(null=True)
    enabled = BooleanAttribute()
    secret = UnicodeAttribute()
    previous_secret = UnicodeAttribute(null=True)
    previous_secret_until_ms = IntAttribute(null=True)
    created_at_ms = IntAttribute()
    updated_at_ms = IntAttribute()
    version = VersionAttribute()

    def registration(self) -> Registration:
        return Registration(
            app_code=self.app_code,
            business_type=self.business_type,
            service_id=self.service_id,
            spec=OwnerSpec(
                callback_url=self.callback_url,
                fact_url=self.fact_url,
                subtypes=frozenset(self.subtypes),
                buttons=tuple(b.button() for b in self.buttons),
                default_expiry_s=self.default_expiry_s,
                allow_links=bool(self.allow_links),
            ),
            secret=self.secret,
            created_at_ms=self.created_at_ms,
            updated_at_ms=self.updated_at_ms,
            enabled=self.enabled,
            previous_secret=self.previous_secret or "",
            previous_secret_until_ms=self.previous_secret_until_ms or 0,
            version=int(self.version),
        )


class DynamoRegistrationStore:
    def __init__(self, table_name: str, client: DynamoDBClient | None = None) -> None:
        self._rows = Database(client).bind(RegistrationRow, table_name)

    def _row(self, registration: Registration, stored_version: int | None) -> RegistrationRow:
        spec = registration.spec
        row = self._rows(
            app_code=registration.app_code,
            business_type=registration.business_type,
            service_id=registration.service_id,
            callback_url=spec.callback_url,
            fact_url=spec.fact_url,
            subtypes=sorted(spec.subtypes),
            buttons=[ButtonMap.of(b) for b in spec.buttons],
            default_expiry_s=spec.default_expiry_s,
            allow_links=spec.allow_links or None,
            enabled=registration.enabled,
            secret=registration.secret,
            previous_secret=registration.previous_secret or None,
            previous_secret_until_ms=registration.previous_secret_until_ms or None,
            created_at_ms=registration.created_at_ms,
            updated_at_ms=registration.updated_at_ms,
        )
        if stored_version is not None:
            row.version = stored_version
        return row

    def get(self, app_code: str, business_type: str) -> Registration | None:
        try:
            return self._rows.get(app_code, business_type, consistent_read=True).registration()
        except self._rows.DoesNotExist:
            return None

    def create(self, registration: Registration) -> None:
        try:
            self._row(registration, None).save(condition=self._rows.app_code.does_not_exist())
        except PutError as error:
            if condition_failed(error):
                raise RegistrationExists(registration.business_type) from error
            raise

    def replace(self, current: Registration, new: Registration) -> Registration:
        try:
            self._row(new, current.version).save()  # PynamoDB checks the stored version and writes the next
        except PutError as error:
            if condition_failed(error):
                raise StaleRegistration(current.business_type) from error
            raise
        return new.evolve(version=current.version + 1)

    def delete(self, current: Registration) -> None:
        try:
            self._row(current, current.version).delete()  # PynamoDB checks the stored version
        except DeleteError as error:
            if condition_failed(error):
                raise StaleRegistration(current.business_type) from error
            raise

    def all(self, app_code: str | None) -> list[Registration]:
        rows = self._rows.query(app_code, consistent_read=True) if app_code else self._rows.scan(consistent_read=True)
        return sorted((row.registration() for row in rows), key=lambda r: (r.app_code, r.business_type))
