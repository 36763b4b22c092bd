"""Loopback fakes of the providers Herald talks to, and how the local cloud points functions at them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from herald_dev.fakes.feishu import FakeFeishu
from herald_dev.fakes.tencent_im import FakeTencentIm

# The template parameters that point the functions at each provider, and the prefix of the variables they set.
PROVIDER_PARAMETERS = {
    "tencent_im": ("TencentImBaseUrl", "TencentImSdkAppId", "TencentImAdminIdentifier", "TencentImSecretKeyParameter"),
    "feishu": ("FeishuBaseUrl", "FeishuAppId", "FeishuAppSecretParameter"),
}
_VARIABLE_PREFIX = {"tencent_im": "HERALD_TENCENT_IM_", "feishu": "HERALD_FEISHU_"}


@dataclass(frozen=True)
class Providers:
    """Where the functions find the providers: their environment, and the fakes' URLs (for people and tests)."""

    environment: dict[str, str] = field(default_factory=dict)
    unset: tuple[str, ...] = ()
    urls: dict[str, str] = field(default_factory=dict)

    def without(self, providers: set[str]) -> Providers:
        """These providers are given otherwise (template parameters): their fakes' settings step aside."""
        prefixes = tuple(_VARIABLE_PREFIX[provider] for provider in providers)
        return Providers(
            {key: value for key, value in self.environment.items() if not key.startswith(prefixes)},
            tuple(key for key in self.unset if not key.startswith(prefixes)),
            {name: url for name, url in self.urls.items() if name not in providers},
        )

    def to_dict(self) -> dict[str, object]:
        return {"environment": self.environment, "unset": list(self.unset), "urls": self.urls}

    @classmethod
    def from_dict(cls, raw: dict[str, object]) -> Providers:
        return cls(dict(raw["environment"]), tuple(raw["unset"]), dict(raw["urls"]))  # type: ignore[call-overload,arg-type]


@dataclass
class Fakes:
    tencent_im: FakeTencentIm
    feishu: FakeFeishu
    providers: Providers

    @property
    def urls(self) -> dict[str, str]:
        return self.providers.urls

    def stop(self) -> None:
        self.tencent_im.stop()
        self.feishu.stop()

    def saved(self) -> dict[str, Any]:
        return {"tencent_im": self.tencent_im.saved(), "feishu": self.feishu.saved()}

    def restore(self, saved: dict[str, Any]) -> None:
        self.tencent_im.restore(saved.get("tencent_im", {}))
        self.feishu.restore(saved.get("feishu", {}))


def start_fakes(tencent_im_port: int = 0, feishu_port: int = 0) -> Fakes:
    tencent = FakeTencentIm(port=tencent_im_port).start()
    feishu = FakeFeishu(port=feishu_port).start()
    return Fakes(
        tencent_im=tencent,
        feishu=feishu,
        providers=Providers(
            environment={
                "HERALD_TENCENT_IM_BASE_URL": tencent.url,
                "HERALD_TENCENT_IM_SDK_APP_ID": str(tencent.sdk_app_id),
                "HERALD_TENCENT_IM_ADMIN_IDENTIFIER": tencent.admin,
                "HERALD_TENCENT_IM_SECRET_KEY": tencent.secret_key,
                "HERALD_FEISHU_BASE_URL": feishu.url,
                "HERALD_FEISHU_APP_ID": feishu.app_id,
                "HERALD_FEISHU_APP_SECRET": feishu.app_secret,
            },
            # The functions use the secrets given directly instead of reading them from SSM.
            unset=("HERALD_TENCENT_IM_SECRET_KEY_PARAMETER", "HERALD_FEISHU_APP_SECRET_PARAMETER"),
            urls={"tencent_im": tencent.url, "feishu": feishu.url},
        ),
    )
