"""Herald's developer and operator tooling: the local cloud, provider fakes and the `herald` CLI.

Never deployed: the Lambda layer holds only `herald`.
"""
