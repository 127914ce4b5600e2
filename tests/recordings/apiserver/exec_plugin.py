"""kubectl-style exec credential plugin for the tests: mints a short-lived HMAC token.

Each run appends a line to $EVL_PLUGIN_LOG so tests can see the recorder re-ran it when
the previous token expired.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time

issued = int(time.time() * 1000)  # milliseconds: whole seconds made 1 s tokens expire early
secret = os.environ["EVL_TOKEN_SECRET"]
mac = hmac.new(secret.encode(), str(issued).encode(), hashlib.sha256).hexdigest()[:24]
with open(os.environ["EVL_PLUGIN_LOG"], "a") as log:
    log.write(f"{issued}\n")
print(
    json.dumps(
        {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "kind": "ExecCredential",
            "status": {"token": f"exp.{issued}.{mac}"},
        }
    )
)
