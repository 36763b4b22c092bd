"""Clients of the outside providers Herald talks to (Tencent IM, Feishu), each behind a small interface."""
