"""Action confirms: chat messages with buttons whose state lives here, while a business owner decides.

Only the receiver acts; a click is idempotent; the owner (e.g. role invitations) stays the source of
truth, and a confirm left behind by a crash is repaired from the owner's fact.
"""
