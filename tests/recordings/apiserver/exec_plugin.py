"""kubectl-style exec credential plugin for the tests: mints a short-lived HMAC token.

Each run appends one JSON line to $EVL_PLUGIN_LOG — when it ran, the KUBERNETES_EXEC_INFO it
was given and whether its stdin is a terminal — so tests can see what the recorder passed
and that it re-ran the plugin.  Behaviour is chosen by environment variables the test puts
in the kubeconfig's ``exec.env``:

* ``EVL_PLUGIN_API_VERSION``: the apiVersion to answer with (default v1beta1);
* ``EVL_PLUGIN_EXPIRES_IN``: seconds until ``status.expirationTimestamp`` (default: none);
* ``EVL_PLUGIN_FAIL``: print this to stderr and exit 1.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import os
import sys
import time

issued = int(time.time() * 1000)  # milliseconds: whole seconds made 1 s tokens expire early
secret = os.environ["EVL_TOKEN_SECRET"]
mac = hmac.new(secret.encode(), str(issued).encode(), hashlib.sha256).hexdigest()[:24]
info = os.environ.get("KUBERNETES_EXEC_INFO")
with open(os.environ["EVL_PLUGIN_LOG"], "a") as log:
    record = {"issued": issued, "exec_info": json.loads(info) if info else None, "stdin_tty": os.isatty(0)}
    log.write(json.dumps(record) + "\n")
if os.environ.get("EVL_PLUGIN_FAIL"):
    print("some plugin chatter", file=sys.stderr)
    print(os.environ["EVL_PLUGIN_FAIL"], file=sys.stderr)
    sys.exit(1)
status: dict[str, str] = {"token": f"exp.{issued}.{mac}"}
if os.environ.get("EVL_PLUGIN_EXPIRES_IN"):
    when = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=float(os.environ["EVL_PLUGIN_EXPIRES_IN"]))
    status["expirationTimestamp"] = when.strftime("%Y-%m-%dT%H:%M:%SZ")
version = os.environ.get("EVL_PLUGIN_API_VERSION", "client.authentication.k8s.io/v1beta1")
print(json.dumps({"apiVersion": version, "kind": "ExecCredential", "status": status}))
