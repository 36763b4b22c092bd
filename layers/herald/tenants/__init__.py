"""Tenants: each app_code's own providers (its Tencent IM app, its Feishu app), and whether it may act."""
