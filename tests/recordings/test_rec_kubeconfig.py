"""``--kubeconfig``/``--context`` behave as in kubectl: the flag, else ``$KUBECONFIG`` (files
merged, the first to set a value wins), else ``~/.kube/config``, and only when none of these
exists the in-cluster service account.  In-process tests of the loader, plus one real recorder
run against the fake API server with a merged ``$KUBECONFIG``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from rec_support import FakeServer, child_env, record_options, run_record

from kube.errors import RecordingError
from recordings.reader import open_recording
from recordings.recorder.client import load_config, merge_kubeconfigs
from recordings.recorder.options import RecordOptions


def _opts(kubeconfig: str | None = None, context: str | None = None) -> RecordOptions:
    return record_options(kubeconfig=kubeconfig, context=context)


def _kc(
    path: Path,
    *,
    current: str | None = None,
    clusters: dict[str, dict[str, Any]] | None = None,
    users: dict[str, dict[str, Any]] | None = None,
    contexts: dict[str, tuple[str, str]] | None = None,
) -> Path:
    doc: dict[str, Any] = {"apiVersion": "v1", "kind": "Config"}
    if current:
        doc["current-context"] = current
    doc["clusters"] = [{"name": n, "cluster": c} for n, c in (clusters or {}).items()]
    doc["users"] = [{"name": n, "user": u} for n, u in (users or {}).items()]
    doc["contexts"] = [{"name": n, "context": {"cluster": c, "user": u}} for n, (c, u) in (contexts or {}).items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def _one(path: Path, server: str, token: str) -> Path:
    return _kc(
        path,
        current="main",
        clusters={"c": {"server": server}},
        users={"u": {"token": token}},
        contexts={"main": ("c", "u")},
    )


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME, no $KUBECONFIG and no service account: each test adds what it needs."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("EVICTLENS_SERVICE_ACCOUNT_DIR", str(tmp_path / "no-sa"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_PORT", raising=False)
    return tmp_path


def _service_account(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sa = world / "sa"
    sa.mkdir()
    (sa / "token").write_text("sa-token")
    (sa / "namespace").write_text("evictlens")
    (sa / "ca.crt").write_text("")
    monkeypatch.setenv("EVICTLENS_SERVICE_ACCOUNT_DIR", str(sa))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")


def _server(opts: RecordOptions) -> str:
    return str(load_config(opts).single.cluster.server)


def test_the_kubeconfig_flag_wins_over_kubeconfig_env_home_and_in_cluster(
    world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _service_account(world, monkeypatch)
    _one(world / "home" / ".kube" / "config", "https://home", "h")
    monkeypatch.setenv("KUBECONFIG", str(_one(world / "env", "https://env", "e")))
    flag = _one(world / "flag", "https://flag", "f")
    assert _server(_opts(str(flag))) == "https://flag"


def test_kubeconfig_env_wins_over_home_and_in_cluster(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _service_account(world, monkeypatch)
    _one(world / "home" / ".kube" / "config", "https://home", "h")
    monkeypatch.setenv("KUBECONFIG", str(_one(world / "env", "https://env", "e")))
    loaded = load_config(_opts())
    assert str(loaded.single.cluster.server) == "https://env"
    assert loaded.single.user is not None and loaded.single.user.token == "e"


def test_home_kubeconfig_wins_over_in_cluster(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, the service account was tried first: a recorder run in a pod with a mounted
    kubeconfig silently recorded its own cluster."""
    _service_account(world, monkeypatch)
    _one(world / "home" / ".kube" / "config", "https://home", "h")
    assert _server(_opts()) == "https://home"


def test_in_cluster_only_when_no_kubeconfig_exists(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _service_account(world, monkeypatch)
    monkeypatch.setenv("KUBECONFIG", f"{world / 'missing-a'}{os.pathsep}{world / 'missing-b'}")
    loaded = load_config(_opts())
    assert str(loaded.single.cluster.server) == "https://10.0.0.1:443"
    assert loaded.single.user is not None and loaded.single.user.token == "sa-token"


def test_kubeconfig_env_ignores_missing_files_and_empty_entries(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = _one(world / "real", "https://real", "r")
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(["", str(world / "missing"), str(real), ""]))
    assert _server(_opts()) == "https://real"


def test_merged_kubeconfig_env_first_file_to_set_a_value_wins(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a: sets current-context and user "u"; defines no cluster and no context.
    a = _kc(world / "a" / "config", current="prod", users={"u": {"token": "from-a"}})
    # b: its own current-context (ignored), context "prod" and "dev", cluster "c" with a CA path
    # relative to b's directory, and a user "u" of its own (ignored whole: a defined "u" first).
    b = _kc(
        world / "b" / "config",
        current="dev",
        clusters={"c": {"server": "https://prod", "certificate-authority": "ca.pem"}},
        users={"u": {"token": "from-b", "client-certificate": "b.pem"}, "v": {"token": "v-from-b"}},
        contexts={"prod": ("c", "u"), "dev": ("c", "v")},
    )
    # c: a later "prod" context pointing elsewhere is ignored.
    c = _kc(
        world / "c" / "config",
        clusters={"other": {"server": "https://other"}},
        users={"w": {"token": "w"}},
        contexts={"prod": ("other", "w")},
    )
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(str(p) for p in (a, b, c)))
    loaded = load_config(_opts())
    assert loaded.single.context_name == "prod"
    assert str(loaded.single.cluster.server) == "https://prod"
    assert loaded.single.user is not None and loaded.single.user.token == "from-a"
    assert loaded.user == {"token": "from-a"}  # no field of b's "u" leaks in
    assert loaded.cluster["certificate-authority"] == str(world / "b" / "ca.pem")  # relative to b
    dev = load_config(_opts(context="dev"))  # --context picks any context of the merged files
    assert dev.single.user is not None and dev.single.user.token == "v-from-b"


def test_merge_takes_each_named_entry_whole_from_the_first_file() -> None:
    first = {"current-context": "", "users": [{"name": "u", "user": {"token": "1"}}]}
    second = {
        "current-context": "x",
        "users": [{"name": "u", "user": {"token": "2", "username": "n"}}, {"name": "z", "user": {"token": "z"}}],
    }
    merged = merge_kubeconfigs([(Path("/one/config"), first), (Path("/two/config"), second)])
    assert merged["current-context"] == "x"  # an empty value sets nothing
    assert merged["users"] == [{"name": "u", "user": {"token": "1"}}, {"name": "z", "user": {"token": "z"}}]


def test_unknown_context_in_merged_files_names_the_context_flag_and_the_files(
    world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = _one(world / "a", "https://a", "a")
    b = _kc(world / "b", contexts={"other": ("c", "u")})
    monkeypatch.setenv("KUBECONFIG", f"{a}{os.pathsep}{b}")
    with pytest.raises(RecordingError) as err:
        load_config(_opts(context="nope"))
    line = err.value.one_line()
    assert line.startswith("--context: context 'nope' not found in $KUBECONFIG (") and "main, other" in line


def test_a_malformed_file_in_kubeconfig_env_is_named(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good = _one(world / "good", "https://good", "g")
    bad = world / "bad"
    bad.write_text("clusters: [unclosed\n")
    monkeypatch.setenv("KUBECONFIG", f"{good}{os.pathsep}{bad}")
    with pytest.raises(RecordingError) as err:
        load_config(_opts())
    assert err.value.source == str(bad) and "malformed kubeconfig: line" in err.value.one_line()


def test_no_kubeconfig_and_no_service_account_is_one_line(world: Path) -> None:
    with pytest.raises(RecordingError) as err:
        load_config(_opts())
    line = err.value.one_line()
    assert "no kubeconfig found (~/.kube/config: ~/.kube/config) and not running in a cluster" in line
    assert "pass --kubeconfig FILE or set KUBECONFIG" in line and "\n" not in line


def test_context_without_any_kubeconfig_is_refused_even_in_cluster(
    world: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _service_account(world, monkeypatch)
    with pytest.raises(RecordingError) as err:
        load_config(_opts(context="prod"))
    assert err.value.source == "--context" and "--context prod needs a kubeconfig" in err.value.one_line()


def test_missing_kubeconfig_flag_file_is_an_error_not_a_fallback(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBECONFIG", str(_one(world / "env", "https://env", "e")))
    with pytest.raises(RecordingError) as err:
        load_config(_opts(str(world / "nope")))
    assert err.value.one_line() == f"{world / 'nope'}: kubeconfig file not found (from --kubeconfig)"


def test_record_refuses_go_less_durations_in_one_line(tmp_path: Path) -> None:
    res = run_record(["-o", str(tmp_path / "rec"), "--interval", "1d"], timeout=60)
    assert res.returncode == 2
    assert res.stderr == (
        'evictlens record: --interval: time: unknown unit "d" in duration "1d"; Go durations have no days: write 24h\n'
    )
    assert not (tmp_path / "rec").exists()


def test_recorder_uses_a_merged_kubeconfig_env_against_the_real_server(server: FakeServer, tmp_path: Path) -> None:
    """File one holds the credential and the current context; file two the cluster, the context
    and a wrong credential of the same user name, which kubectl's merge ignores."""
    base = yaml.safe_load(Path(server.kubeconfig).read_text())
    fake = next(c["cluster"] for c in base["clusters"] if c["name"] == "fake")
    one = _kc(tmp_path / "one" / "config", current="merged", users={"me": {"token": server.ready["token"]}})
    two = _kc(
        tmp_path / "two" / "config",
        current="elsewhere",
        clusters={"fake": fake},
        users={"me": {"token": "not-a-valid-token"}},
        contexts={"merged": ("fake", "me")},
    )
    env = {"KUBECONFIG": f"{one}{os.pathsep}{two}", "HOME": str(tmp_path / "home")}
    out = tmp_path / "rec"
    res = run_record(
        ["-o", str(out), "--interval", "1s", "--timeout", "2s", "--duration", "1.5s"], env={**child_env(), **env}
    )
    assert res.returncode == 0, res.stderr
    rec = open_recording(out)
    assert rec.nodes() == ["node-000", "node-001", "node-002"] and all(t.ok for t in rec.ticks())
