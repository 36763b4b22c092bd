"""A tenant as registered: its own Tencent IM and Feishu apps (or the stack's), and whether it is enabled.

A tenant's secrets are never here: only the names of the SSM parameters that hold them, under the stack's
prefix for tenants' secrets (the functions may read nothing else)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from herald.auth.service_keys import validate_app_code, validate_weight
from herald.errors import InvalidArgument, PermissionDenied

MAX_DISPLAY_NAME = 64
_PARAMETER = re.compile(r"^/?[A-Za-z0-9_.\-/]{1,1011}$")  # SSM's name alphabet (a name is at most 1011 long)
_IDENTIFIER = re.compile(r"^[A-Za-z0-9_@.\-]{1,32}$")  # a Tencent IM account id (UserID: at most 32 bytes)
_FEISHU_APP_ID = re.compile(r"^cli_[A-Za-z0-9]{1,60}$")
MAX_SDK_APP_ID = 2**32 - 1


class TenantUnknown(PermissionDenied):
    def __init__(self, app_code: str) -> None:
        super().__init__(f"app_code {app_code!r} is not a registered tenant of this stack", reason="tenant_unknown")


class TenantDisabled(PermissionDenied):
    def __init__(self, app_code: str) -> None:
        super().__init__(f"tenant {app_code!r} is disabled", reason="tenant_disabled")


class TenantPaused(Exception):
    """A disabled tenant's delivery, or one an operator's pause of the tenant holds (`pause_key`): it is held,
    untried, until the tenant is enabled again or the pause ends (herald.holds)."""

    def __init__(self, app_code: str, pause_key: str = "") -> None:
        super().__init__(f"tenant {app_code} is paused" if pause_key else f"tenant {app_code} is disabled")
        self.app_code = app_code
        self.pause_key = pause_key


@dataclass(frozen=True)
class TencentImApp:
    """A tenant's own Tencent IM application: its SDKAppID, the admin account Herald sends as, and the SSM
    parameter holding its secret key; `base_url` "" is the stack's."""

    sdk_app_id: int
    admin_identifier: str
    secret_parameter: str
    base_url: str = ""


@dataclass(frozen=True)
class FeishuApp:
    """A tenant's own Feishu app: its app id and the SSM parameter holding its secret; `base_url` "": the stack's."""

    app_id: str
    secret_parameter: str
    base_url: str = ""


@dataclass(frozen=True)
class Tenant:
    app_code: str
    display_name: str = ""
    enabled: bool = True
    tencent_im: TencentImApp | None = None  # None: the stack's app
    feishu: FeishuApp | None = None  # None: the stack's app
    updated_at_ms: int = 0
    weight: int = 1  # its weight in a provider app it shares with other tenants (herald.limits.shares)

    def admit(self) -> None:
        if not self.enabled:
            raise TenantDisabled(self.app_code)

    def switched(self, enabled: bool, now: int) -> Tenant:
        return replace(self, enabled=enabled, updated_at_ms=now)

    def view(self) -> dict[str, Any]:
        """What an operator sees: parameter names, never a secret."""
        im, feishu = self.tencent_im, self.feishu
        return {
            "app_code": self.app_code,
            "display_name": self.display_name,
            "enabled": self.enabled,
            "weight": self.weight,
            "tencent_im": (
                {
                    "sdk_app_id": im.sdk_app_id,
                    "admin": im.admin_identifier,
                    "secret_parameter": im.secret_parameter,
                    "base_url": im.base_url or "(the stack's)",
                }
                if im
                else "the stack's"
            ),
            "feishu": (
                {
                    "app_id": feishu.app_id,
                    "secret_parameter": feishu.secret_parameter,
                    "base_url": feishu.base_url or "(the stack's)",
                }
                if feishu
                else "the stack's"
            ),
            "updated_at_ms": self.updated_at_ms,
        }


@dataclass(frozen=True)
class TenantRules:
    """What a registration may name: secrets only under the stack's prefix, base URLs over https (a local
    cloud allows http, its fakes being on loopback)."""

    secrets_prefix: str
    https_only: bool = True

    def parameter(self, name: str, what: str) -> str:
        """The parameter's full name (a leading `/`), under the prefix."""
        if not _PARAMETER.fullmatch(name) or "//" in name or name.endswith("/") or "/../" in f"/{name}/":
            raise InvalidArgument(f"{what} is an SSM parameter name (letters, digits, _ . - /), not {name!r}")
        full, prefix = "/" + name.lstrip("/"), "/" + self.secrets_prefix.strip("/") + "/"
        if not full.startswith(prefix):
            raise InvalidArgument(f"{what} must be under {prefix} (the functions may read tenants' secrets only there)")
        return full

    def base_url(self, url: str, what: str) -> str:
        if not url:
            return ""
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - a malformed port raises here
        except ValueError as exc:
            raise InvalidArgument(f"{what} is not a URL: {exc}") from exc
        schemes = ("https",) if self.https_only else ("https", "http")
        if (
            parts.scheme not in schemes
            or not parts.hostname
            or parts.username is not None
            or parts.password is not None
            or parts.query
            or parts.fragment
            or not url.isprintable()
            or any(ch.isspace() for ch in url)
        ):
            raise InvalidArgument(
                f"{what} is {' or '.join(schemes)}://host[:port][/path], no credentials, query or fragment"
            )
        return url.rstrip("/")

    def tencent_im(self, sdk_app_id: int, admin: str, parameter: str, base_url: str) -> TencentImApp:
        if not 0 < sdk_app_id <= MAX_SDK_APP_ID:
            raise InvalidArgument(f"--tencent-im-sdk-app-id is a positive 32-bit number, not {sdk_app_id}")
        if not _IDENTIFIER.fullmatch(admin):
            raise InvalidArgument(
                f"--tencent-im-admin is a Tencent IM account id (1-32 of A-Z a-z 0-9 _ @ . -), not {admin!r}"
            )
        return TencentImApp(
            sdk_app_id,
            admin,
            self.parameter(parameter, "--tencent-im-secret-parameter"),
            self.base_url(base_url, "--tencent-im-base-url"),
        )

    def feishu(self, app_id: str, parameter: str, base_url: str) -> FeishuApp:
        if not _FEISHU_APP_ID.fullmatch(app_id):
            raise InvalidArgument(f"--feishu-app-id is a Feishu app id (cli_...), not {app_id!r}")
        return FeishuApp(
            app_id, self.parameter(parameter, "--feishu-secret-parameter"), self.base_url(base_url, "--feishu-base-url")
        )

    def tenant(
        self,
        app_code: str,
        display_name: str,
        tencent_im: TencentImApp | None,
        feishu: FeishuApp | None,
        now: int,
        enabled: bool = True,
        weight: int = 1,
    ) -> Tenant:
        if len(display_name) > MAX_DISPLAY_NAME or not display_name.isprintable():
            raise InvalidArgument(f"a display name is at most {MAX_DISPLAY_NAME} printable characters")
        validate_weight(weight, "a tenant's --weight")
        return Tenant(validate_app_code(app_code), display_name, enabled, tencent_im, feishu, now, weight)
