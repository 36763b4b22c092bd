"""Role invitations (host / agency / bd): the owner and source of truth of who holds which role.

It knows nothing of confirms; its table's stream is its outbox.
"""
