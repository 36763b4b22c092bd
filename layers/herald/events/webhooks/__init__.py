"""Partners' status webhooks: what became of their events, posted to them."""
