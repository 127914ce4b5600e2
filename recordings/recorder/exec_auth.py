"""Exec credential plugins (``users[].user.exec`` in a kubeconfig), as client-go runs them.

lightkube 1.0 refuses ``client.authentication.k8s.io/v1`` — the version every current cloud
plugin (gke-gcloud-auth-plugin, aws eks get-token, kubelogin) is configured with — and ignores
``interactiveMode``, ``provideClusterInfo`` and ``expirationTimestamp``.  This module mirrors
client-go's ``plugin/pkg/client/auth/exec/exec.go`` (Authenticator.refreshCredsLocked) for
v1 and v1beta1:

* ``KUBERNETES_EXEC_INFO`` carries an ExecCredential of the configured version whose
  ``spec.interactive`` says whether the plugin may prompt, and — only with
  ``provideClusterInfo: true`` — ``spec.cluster`` (server, TLS settings, the CA as base64
  data, and the cluster's ``client.authentication.k8s.io/exec`` extension as ``config``);
* ``interactiveMode`` (required in v1, ``IfAvailable`` by default in v1beta1): ``Never`` gives
  the plugin no stdin, ``IfAvailable`` gives it the terminal when stdin is one, ``Always``
  fails unless stdin is a terminal;
* the token is cached until ``status.expirationTimestamp``, and the plugin runs again once it
  has passed or when the server answers 401 to the cached token (once per token, however
  many requests got the 401 at the same time).

Tokens never appear in errors; a plugin's own stderr is passed through when it may prompt,
else its last line is quoted in the one-line error.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime as dt
import os
import sys
from collections.abc import AsyncGenerator, Callable, Generator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import orjson

from kube.errors import CredentialError, RecordingError

GROUP = "client.authentication.k8s.io"
VERSIONS = (f"{GROUP}/v1", f"{GROUP}/v1beta1")
EXEC_INFO_ENV = "KUBERNETES_EXEC_INFO"
CLUSTER_EXTENSION = f"{GROUP}/exec"  # a cluster extension passed to the plugin as spec.cluster.config
MODES = ("Never", "IfAvailable", "Always")


# CredentialError lives in kube.errors (exit 3); it is re-exported here, where the exec plugin raises it.
__all__ = ["CredentialError", "ExecConfig", "ExecCredentialAuth", "cluster_info"]


def _stdin_is_terminal() -> bool:
    try:
        return os.isatty(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):
        return False


def cluster_info(cluster: Mapping[str, Any], kubeconfig: Path | None) -> dict[str, Any]:
    """``spec.cluster`` of client-go's ExecCredential (rest.ConfigToExecCluster).

    The CA always travels as data: a ``certificate-authority`` file is read (relative to the
    kubeconfig, as kubectl resolves it) and base64-encoded like Go's ``[]byte`` in JSON.
    """
    out: dict[str, Any] = {"server": cluster.get("server", "")}
    for key in ("tls-server-name", "insecure-skip-tls-verify", "proxy-url", "disable-compression"):
        if cluster.get(key):
            out[key] = cluster[key]
    ca = cluster.get("certificate-authority-data")
    if not ca and cluster.get("certificate-authority"):
        path = Path(str(cluster["certificate-authority"])).expanduser()
        if not path.is_absolute() and kubeconfig is not None:
            path = kubeconfig.parent / path
        try:
            ca = base64.b64encode(path.read_bytes()).decode()
        except OSError as exc:
            problem = f"cannot read certificate-authority {path}: {exc.strerror}"
            raise RecordingError(problem, source="kubeconfig") from None
    if ca:
        out["certificate-authority-data"] = ca
    for ext in cluster.get("extensions") or []:
        if isinstance(ext, Mapping) and ext.get("name") == CLUSTER_EXTENSION:
            out["config"] = ext.get("extension")
    return out


@dataclass
class ExecConfig:
    """A kubeconfig ``exec`` block, checked as client-go's clientcmd validation checks it."""

    api_version: str
    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    interactive_mode: str = "IfAvailable"
    provide_cluster_info: bool = False
    install_hint: str | None = None

    @classmethod
    def parse(cls, raw: Mapping[str, Any], *, user: str) -> ExecConfig:
        where = f"users[{user}].exec"

        def bad(problem: str) -> RecordingError:
            return RecordingError(problem, source="kubeconfig", field=where)

        version = raw.get("apiVersion")
        if version not in VERSIONS:
            raise bad(f"apiVersion {version!r} is not supported; expected one of {', '.join(VERSIONS)}")
        command = raw.get("command")
        if not isinstance(command, str) or not command:
            raise bad("command is required")
        mode = raw.get("interactiveMode")
        if mode is None:
            if version.endswith("/v1"):
                raise bad(f"interactiveMode must be specified for {version} (one of {', '.join(MODES)})")
            mode = "IfAvailable"
        if mode not in MODES:
            raise bad(f"interactiveMode {mode!r} is not one of {', '.join(MODES)}")
        env: dict[str, str] = {}
        for item in raw.get("env") or []:
            if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
                raise bad("env entries need a name and a value")
            env[item["name"]] = str(item.get("value", ""))
        return cls(
            api_version=version,
            command=command,
            args=[str(a) for a in raw.get("args") or []],
            env=env,
            interactive_mode=mode,
            provide_cluster_info=bool(raw.get("provideClusterInfo")),
            install_hint=raw.get("installHint") if isinstance(raw.get("installHint"), str) else None,
        )


@dataclass
class Credential:
    token: str
    expires: dt.datetime | None  # None: valid until the server says otherwise (401)

    def expired(self, now: dt.datetime) -> bool:
        return self.expires is not None and now >= self.expires


def _parse_time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(dt.UTC)


class ExecCredentialAuth(httpx2.Auth):
    """httpx auth flow that puts the plugin's bearer token on every request."""

    def __init__(
        self,
        config: ExecConfig,
        cluster: Mapping[str, Any] | None = None,
        *,
        is_terminal: Callable[[], bool] = _stdin_is_terminal,
        now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
    ) -> None:
        self.config = config
        self.cluster = dict(cluster or {})
        self.runs = 0  # how often the plugin ran (tests, status)
        self._is_terminal = is_terminal
        self._now = now
        self._cred: Credential | None = None
        self._lock: asyncio.Lock | None = None

    # -- running the plugin ---------------------------------------------------------------
    def _interactive(self) -> bool:
        mode = self.config.interactive_mode
        if mode == "Never":
            return False
        terminal = self._is_terminal()
        if mode == "Always" and not terminal:
            raise CredentialError(
                f"exec plugin {self.config.command} cannot support interactive mode: standard input is not a "
                "terminal (interactiveMode is Always; run in a terminal or set it to IfAvailable)",
                source="kubeconfig",
            )
        return terminal

    def _invocation(self) -> tuple[list[str], dict[str, str], bool]:
        interactive = self._interactive()
        spec: dict[str, Any] = {"interactive": interactive}
        if self.config.provide_cluster_info:
            spec["cluster"] = self.cluster
        info = {"kind": "ExecCredential", "apiVersion": self.config.api_version, "spec": spec}
        env = {**os.environ, **self.config.env, EXEC_INFO_ENV: orjson.dumps(info).decode()}
        return [self.config.command, *self.config.args], env, interactive

    def _failed(self, problem: str) -> CredentialError:
        return CredentialError(f"exec plugin {self.config.command}: {problem}", source="kubeconfig")

    def _not_found(self) -> CredentialError:
        hint = f" ({' '.join(self.config.install_hint.split())})" if self.config.install_hint else ""
        return self._failed(f"command not found{hint}")

    def _parse(self, code: int, stdout: bytes, stderr: bytes | None) -> Credential:
        if code != 0:
            lines = [ln.strip() for ln in (stderr or b"").decode("utf-8", "replace").splitlines() if ln.strip()]
            said = f": {lines[-1][:300]}" if lines else ""
            raise self._failed(f"exited with status {code}{said}")
        try:
            doc = orjson.loads(stdout)
        except orjson.JSONDecodeError:
            raise self._failed("did not print an ExecCredential (invalid JSON on stdout)") from None
        if not isinstance(doc, dict) or doc.get("kind") != "ExecCredential":
            raise self._failed("did not print an ExecCredential")
        if doc.get("apiVersion") != self.config.api_version:
            raise self._failed(
                f"is configured for {self.config.api_version} but returned apiVersion {doc.get('apiVersion')!r}"
            )
        status = doc.get("status")
        if not isinstance(status, dict):
            raise self._failed("returned no status")
        token = status.get("token")
        if not token:
            if status.get("clientCertificateData") or status.get("clientKeyData"):
                raise self._failed("returned a client certificate; only token credentials are supported")
            raise self._failed("returned no token")
        expires = None
        if status.get("expirationTimestamp"):
            try:
                expires = _parse_time(str(status["expirationTimestamp"]))
            except ValueError:
                raise self._failed(
                    f"returned expirationTimestamp {status['expirationTimestamp']!r}, expected RFC 3339"
                ) from None
        self.runs += 1
        return Credential(str(token), expires)

    async def _run(self) -> Credential:
        cmd, env, interactive = self._invocation()
        pipe = asyncio.subprocess.PIPE
        try:
            proc = await asyncio.create_subprocess_exec(
                *cmd,
                env=env,
                stdin=None if interactive else asyncio.subprocess.DEVNULL,
                stdout=pipe,
                stderr=None if interactive else pipe,  # a prompting plugin talks to the terminal
            )
        except FileNotFoundError:
            raise self._not_found() from None
        except OSError as exc:
            raise self._failed(f"cannot run it ({exc.strerror})") from None
        reads = [asyncio.ensure_future(_bounded(proc.stdout, proc)), asyncio.ensure_future(_bounded(proc.stderr, proc))]
        out, err = await asyncio.gather(*reads)
        await proc.wait()
        if out is None or err is None:
            raise self._failed(f"wrote more than {OUTPUT_LIMIT >> 20} MiB (an ExecCredential is a few KiB)")
        return self._parse(proc.returncode or 0, out, err if proc.stderr is not None else None)

    # -- the cached credential ------------------------------------------------------------
    async def credential(self, *, rejected: Credential | None = None, ahead: float = 0.0) -> Credential:
        """The cached credential, running the plugin when there is none, it expired (or expires within
        ``ahead`` seconds), or the server rejected it (``rejected``; skipped if another request already
        replaced it)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            cred = self._cred
            soon = self._now() + dt.timedelta(seconds=ahead)
            if cred is None or cred.expired(soon) or (rejected is not None and cred is rejected):
                cred = self._cred = await self._run()
            return cred

    async def async_auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        cred = await self.credential()
        request.headers["Authorization"] = f"Bearer {cred.token}"
        response = yield request
        if response.status_code != 401:
            return
        fresh = await self.credential(rejected=cred)
        if fresh is cred:
            return
        request.headers["Authorization"] = f"Bearer {fresh.token}"
        yield request

    def sync_auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
        raise NotImplementedError("the recorder only uses asynchronous clients")


OUTPUT_LIMIT = 1 << 20
"""What a credential plugin may write (stdout, and stderr when captured): an ExecCredential is a few KiB, and a
plugin gone wrong must not be read until memory runs out."""


async def _bounded(stream: asyncio.StreamReader | None, proc: asyncio.subprocess.Process) -> bytes | None:
    """All of ``stream`` up to :data:`OUTPUT_LIMIT`; past it the plugin is killed (its other stream then ends
    too) and the answer is None; b"" for no stream.

    After the kill the rest is read to its end and dropped: a reader that fell behind has paused the pipe, and
    asyncio's ``Process.wait()`` returns only once every pipe has seen its end (it hung until the request's
    timeout on a loaded box)."""
    if stream is None:
        return b""
    data = bytearray()
    while chunk := await stream.read(1 << 16):
        data += chunk
        if len(data) > OUTPUT_LIMIT:
            with contextlib.suppress(ProcessLookupError):  # it may have exited meanwhile
                proc.kill()
            while await stream.read(1 << 16):  # the plugin is gone: what is left is bounded by the pipe
                pass
            return None
    return bytes(data)
