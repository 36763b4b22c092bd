"""`python tests/support/moto_server.py PORT [patched]`: a moto server as the pip package ships it, or with
the local cloud's corrections (herald_dev.moto_patches), to show each correction against plain moto."""

from __future__ import annotations

import sys
import threading

from moto.server import ThreadedMotoServer


def main(port: int, patched: bool) -> None:
    if patched:
        from herald_dev import moto_patches

        moto_patches.install()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    print("ready", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main(int(sys.argv[1]), len(sys.argv) > 2 and sys.argv[2] == "patched")
