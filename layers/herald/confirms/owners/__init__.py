"""Owner services: teams that register a business type and let Herald run its confirms (contract §1)."""
