"""Operational health: gauges of what waits for an operator (blocked services, UNKNOWN jobs, stuck confirms,
failed pushes, turns not handed over), published every minute as metrics the alarms watch."""
