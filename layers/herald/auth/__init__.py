"""Who is calling: app users (JWT) and partner/engine services (service keys)."""
