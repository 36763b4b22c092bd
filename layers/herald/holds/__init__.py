"""Deliveries held while what they wait on is paused (a disabled tenant): off their queue, kept until resumed."""
