"""Inbox: a per-user notification center with an exact unread count pushed over WebSocket."""
