"""Loopback fakes of the providers Herald talks to (JWKS now; Tencent IM and Feishu as they arrive)."""
