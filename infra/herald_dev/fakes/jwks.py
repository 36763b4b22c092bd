"""An identity provider on loopback: its OpenID discovery document (`/.well-known/openid-configuration`, naming
its issuer and key set), and a JWKS with an RSA and an EC key it can sign tokens with."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from herald.auth.tokens import DISCOVERY_PATH

EC_KEY_ID = "test-ec-key"


class FakeJwks:
    def __init__(self, issuer: str | None = None, audience: str = "herald", key_id: str = "test-key") -> None:
        self.audience = audience
        self.key_id = key_id
        self.requests = 0
        self._private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = json.loads(RSAAlgorithm.to_jwk(self._private.public_key()))
        public.update({"kid": key_id, "use": "sig", "alg": "RS256"})
        self._ec_private = ec.generate_private_key(ec.SECP256R1())
        ec_public = json.loads(ECAlgorithm.to_jwk(self._ec_private.public_key()))
        ec_public.update({"kid": EC_KEY_ID, "use": "sig"})
        self._document = json.dumps({"keys": [public, ec_public]}).encode()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self.issuer = issuer or f"{self.base_url}/"

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def url(self) -> str:
        return f"{self.base_url}/.well-known/jwks.json"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.endswith(DISCOVERY_PATH):
                    body = json.dumps({"issuer": fake.issuer, "jwks_uri": fake.url}).encode()
                else:
                    fake.requests += 1
                    body = fake._document
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler

    def start(self) -> FakeJwks:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def sign(self, claims: dict[str, Any], ttl: int = 600, algorithm: str = "RS256", **headers: Any) -> str:
        """Signed with the RSA key (RS*) or the P-256 key (ES256); `kid` names the matching key unless given."""
        now = int(time.time())
        body = {"iss": self.issuer, "aud": self.audience, "iat": now, "exp": now + ttl, **claims}
        key: Any = self._ec_private if algorithm.startswith("ES") else self._private
        kid = EC_KEY_ID if algorithm.startswith("ES") else self.key_id
        header = {"kid": kid, **headers}
        header = {name: value for name, value in header.items() if value is not None}
        return jwt.encode(body, key, algorithm=algorithm, headers=header)
