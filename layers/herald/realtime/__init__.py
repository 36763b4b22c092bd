"""Realtime: WebSocket connections per user and pushes to all of a user's connections."""
