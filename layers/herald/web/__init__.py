"""The HTTP edge every context's routes stand on: the response envelope, who is calling, strict input.
It imports no context's routes; herald.api composes the app from them."""
