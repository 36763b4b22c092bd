"""Provider secrets come from their SSM SecureString (Powertools Parameters, cached), or directly locally."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from herald.errors import ConfigurationError
from herald.secrets import secret_source
from herald.settings import Secret


def test_a_secret_is_read_decrypted_from_its_parameter_and_cached_across_a_rotation() -> None:
    with mock_aws():
        ssm = boto3.client("ssm")
        ssm.put_parameter(Name="/herald/prod/im-key", Value="first", Type="SecureString")
        read = secret_source(None, "/herald/prod/im-key", "Tencent IM secret key")
        assert read() == "first"
        ssm.put_parameter(Name="/herald/prod/im-key", Value="rotated", Type="SecureString", Overwrite=True)
        assert read() == "first"  # within the cache's few minutes


def test_a_secret_given_directly_is_used_as_it_is_and_one_given_neither_way_is_a_configuration_error() -> None:
    assert secret_source(Secret("local"), "/ignored", "Feishu app secret")() == "local"
    with pytest.raises(ConfigurationError, match="Feishu app secret is not configured"):
        secret_source(None, None, "Feishu app secret")
