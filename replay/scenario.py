"""The closed loop: a scenario's generator and one eviction manager per node, tick by tick.

Each tick the generator reports every node's summary and the objects that changed; they are
written to the recording through the real writer (exactly what ``evictlens record`` would have
kept), then each node's :class:`~replay.kubelet.manager.EvictionManager` takes its pass over the
same data, and what it decides goes back into the generator: an evicted pod stops using
anything and turns ``Failed``/``Evicted`` with the kubelet's message (the recording's ground
truth), a controller-owned one asked to come back is recreated after its delay, the node's
pressure conditions change, and a pod starting under pressure goes through the kubelet's
admission. Replaying the recording later with the same kubelet therefore predicts the same
evictions with the same messages; with another version or threshold it shows the difference.
"""

from __future__ import annotations

import base64
import dataclasses
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kube.errors import InputError
from recordings.format import Manifest
from recordings.scenarios import Scenario, ScenarioRun
from recordings.scenarios.generator import KernelKill
from recordings.scenarios.units import format_duration
from recordings.scratch import scratch_dir
from recordings.summary_codec import EPOCH
from recordings.writer import RecordingWriter
from replay.context import active_pods
from replay.kubelet.api import Pod, parse_pod, parse_summary
from replay.kubelet.config import config_from_kubelet_configuration
from replay.kubelet.manager import EvictionManager, FsTopology
from replay.kubelet.versions import VersionProfile, profile
from replay.settings import SettingsRequest

if TYPE_CHECKING:
    from recordings.reader import Recording
    from replay.results import ReplayResult

DOCUMENT = "scenario_document"
"""Manifest option: the scenario file's text (recordings written before it lack it: no regeneration)."""
FILES = "scenario_files"
"""Manifest option: the files the scenario names (``file:``), base64 by name."""
GENERATED_WITH = "generated_with"
"""Manifest option: the settings the closed loop ran with: ``kubelet_version`` (None: the scenario's),
``kubelet_flags`` (``--eviction-hard=…``, each replacing its field) and ``feature_gates``."""
CLOSED_LOOP = "closed loop: regenerated from the scenario"


@dataclass(frozen=True)
class ScenarioEviction:
    """An eviction the kubelet made while the scenario ran (also in the recording's ground truth)."""

    node: str
    tick: int
    time: datetime
    namespace: str
    pod: str
    uid: str
    cause: str
    message: str
    owner_kinds: tuple[str, ...]


@dataclass(frozen=True)
class ScenarioOutcome:
    scenario: Scenario
    out: Path
    ticks: int
    kubelet_versions: Mapping[str, str]
    evictions: tuple[ScenarioEviction, ...]
    rejected: tuple[tuple[str, str, str], ...]
    """(node, namespace/name, message) of pods the kubelet refused to admit under pressure."""
    condition_changes: tuple[tuple[str, datetime, tuple[str, ...]], ...]
    kernel_kills: tuple[KernelKill, ...] = ()
    """The OOM kills of the kernel model (recordings/scenarios/oomkiller.py), in time order."""


def _at(micros: int) -> datetime:
    return EPOCH + timedelta(microseconds=micros)


def _profile(scenario: Scenario, node_name: str, feature_gates: Mapping[str, bool] | None) -> VersionProfile:
    node = scenario.node(node_name)
    label = "master" if node.kubelet.minor >= 38 else f"1.{node.kubelet.minor}"
    gates = {**node.kubelet.feature_gates, **(feature_gates or {})}
    try:
        return profile(label, gates)
    except InputError as err:
        raise InputError(err.problem, source=scenario.file, field=f"node {node_name}: kubelet") from None


def run_scenario(
    scenario: Scenario,
    out: str | Path,
    *,
    feature_gates: Mapping[str, bool] | None = None,
    kubelet_flags: Sequence[str] = (),
    kubelet_version: str | None = None,
    pace: Callable[[int], bool] | None = None,
) -> ScenarioOutcome:
    """Generate ``scenario`` closed-loop into a new recording at ``out``; ``kubelet_flags`` and ``kubelet_version``:
    the command-line overrides the scenario was loaded with (recordings.scenarios.load_scenario). The manifest
    keeps them with the scenario document (:data:`GENERATED_WITH`, :data:`DOCUMENT`), so a replay with other
    settings can regenerate the closed loop (:func:`closed_loop_replay`).

    ``pace`` (the live player, live/play.py) is called with each tick's time (µs) before that tick is committed,
    so a follower sees the recording grow in (accelerated) real time; it returns False to end the run there (the
    ticks so far are finalized as a shorter recording)."""
    root = Path(out)
    for template in scenario.pods:  # the port's own reading of each manifest, before any output exists
        try:
            parse_pod(template.manifest, source=scenario.file)
        except InputError as err:
            raise InputError(
                err.problem,
                source=scenario.file,
                line=template.line,
                field=f"pod {template.namespace}/{template.name}: {err.field or 'manifest'}",
            ) from None
    managers: dict[str, EvictionManager] = {}
    for node in scenario.nodes:
        prof = _profile(scenario, node.name, feature_gates)
        config = config_from_kubelet_configuration(
            node.kubelet.configz(), source=f"{scenario.file} node {node.name}", profile=prof
        )
        topology = FsTopology(node.dedicated_image_fs, node.split)
        managers[node.name] = EvictionManager(config, prof, topology)
    rejected: list[tuple[str, str, str]] = []

    def admit(node: str, manifest: Mapping[str, Any], at: int) -> tuple[bool, str, str]:
        verdict = managers[node].admit(parse_pod(manifest, source=f"{scenario.file} pod"))
        if not verdict.admit:
            meta = manifest["metadata"]
            rejected.append((node, f"{meta['namespace']}/{meta['name']}", verdict.message))
        return verdict.admit, verdict.reason, verdict.message

    run = ScenarioRun(scenario, admit=admit)
    options = {
        "scenario": scenario.name,
        "scenario_digest": scenario.digest,
        "scenario_file": Path(scenario.file).name,
        "interval": format_duration(scenario.interval),
        "duration": format_duration(scenario.duration),
        "closed_loop": True,
    }
    if kubelet_flags:
        options["kubelet_flags"] = list(kubelet_flags)
    if scenario.document:
        options[DOCUMENT] = scenario.document.decode()
        if scenario.files:
            options[FILES] = {name: base64.b64encode(data).decode() for name, data in scenario.files.items()}
        options[GENERATED_WITH] = {
            "kubelet_version": kubelet_version,
            "kubelet_flags": list(kubelet_flags),
            "feature_gates": dict(feature_gates or {}),
        }
    created = not root.exists()
    if not created and (not root.is_dir() or any(root.iterdir())):
        raise InputError(
            "already exists and is not an empty directory; give a new directory for the recording",
            source=str(root),
            field="-o",
        )
    writer = RecordingWriter(root, Manifest(source="scenario", options=options))
    evictions: list[ScenarioEviction] = []
    changes: list[tuple[str, datetime, tuple[str, ...]]] = []
    last_conditions: dict[str, tuple[str, ...]] = {n.name: () for n in scenario.nodes}
    pod_cache: dict[str, tuple[tuple[str, ...], list[Pod]]] = {}
    ticks = 0
    try:
        for tick in run.ticks():
            ticks += 1
            for change in tick.objects:
                writer.observe(change.kind, change.body, observed=change.observed, node=change.node)
            frame = writer.begin_tick(tick.time)
            for name, summary in tick.summaries.items():
                frame.add_summary(name, summary, scraped=tick.time, source=f"{scenario.name} {name} tick {tick.index}")
            for name, error in tick.gaps.items():
                frame.add_gap(name, error)
            if pace is not None and not pace(tick.time):
                ticks -= 1
                break
            writer.commit(frame)
            when = _at(tick.time)
            for name, manager in managers.items():
                if name in tick.gaps:  # a kubelet starved of memory takes no pass
                    continue
                parsed_summary = parse_summary(tick.summaries[name], source=f"scenario {name} tick {tick.index}")
                manifests = run.pods_in_force(name)
                key = tuple(f"{m['metadata']['uid']}/{m['status'].get('phase')}" for m in manifests)
                cached = pod_cache.get(name)
                if cached is None or cached[0] != key:
                    parsed = [parse_pod(m, source=f"{scenario.file} pod") for m in manifests]
                    cached = (key, parsed)
                    pod_cache[name] = cached
                result = manager.synchronize(parsed_summary, active_pods(cached[1], name), when)
                if result.error:
                    raise InputError(
                        f"the kubelet's eviction manager refused to run: {result.error}",
                        source=scenario.file,
                        field=f"nodes {name}",
                    )
                if result.node_event:
                    run.node_event(name, "EvictionThresholdMet", result.node_event, tick.time)
                for ev in result.evictions:
                    conditions = None
                    if ev.condition is not None:
                        c = ev.condition
                        conditions = [{"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}]
                    run.evicted(ev.pod.uid, tick.time, ev.message, conditions=conditions)
                    evictions.append(
                        ScenarioEviction(
                            name,
                            tick.index,
                            when,
                            ev.pod.namespace,
                            ev.pod.name,
                            ev.pod.uid,
                            ev.cause,
                            ev.message,
                            ev.pod.owner_kinds,
                        )
                    )
                run.set_node_conditions(name, result.node_conditions, tick.time)
                if tuple(result.node_conditions) != last_conditions[name]:
                    last_conditions[name] = tuple(result.node_conditions)
                    changes.append((name, when, last_conditions[name]))
        for change in run.drain():
            writer.observe(change.kind, change.body, observed=change.observed, node=change.node)
        writer.finalize()
    except BaseException:
        writer.close_after_failure()
        if created:
            shutil.rmtree(root, ignore_errors=True)
        raise
    return ScenarioOutcome(
        scenario,
        root,
        ticks,
        dict(writer.manifest.kubelet_versions),
        tuple(evictions),
        tuple(rejected),
        tuple(changes),
        tuple(run.kernel_kills),
    )


# -- the closed loop again, per variant ------------------------------------------------------------------------


@dataclass(frozen=True)
class GeneratedWith:
    """How a scenario recording was generated: its document and the overrides it was loaded with."""

    document: bytes
    file: str
    files: Mapping[str, bytes]
    kubelet_version: str | None
    kubelet_flags: tuple[str, ...]
    feature_gates: Mapping[str, bool]


def generated_with(rec: Recording) -> GeneratedWith | None:
    """The scenario a recording was generated from, when it keeps one (``evictlens scenario`` since the manifest
    option :data:`DOCUMENT`; older scenario recordings and every other recording: None)."""
    options = rec.manifest.options
    if rec.manifest.source != "scenario" or not isinstance(options.get(DOCUMENT), str):
        return None
    settings = options.get(GENERATED_WITH)
    settings = settings if isinstance(settings, Mapping) else {}
    files = options.get(FILES)
    version = settings.get("kubelet_version")
    flags = settings.get("kubelet_flags", options.get("kubelet_flags"))
    gates = settings.get("feature_gates")
    try:
        return GeneratedWith(
            str(options[DOCUMENT]).encode(),
            str(options.get("scenario_file") or "scenario.yaml"),
            {str(k): base64.b64decode(str(v)) for k, v in files.items()} if isinstance(files, Mapping) else {},
            version if isinstance(version, str) else None,
            tuple(str(f) for f in flags) if isinstance(flags, list) else (),
            {str(k): bool(v) for k, v in gates.items()} if isinstance(gates, Mapping) else {},
        )
    except ValueError:
        raise InputError(
            "the manifest's scenario_files are not base64", source=str(rec.root), field="manifest.json"
        ) from None


def differs(request: SettingsRequest) -> bool:
    """Whether a request asks for other kubelet settings than the recorded ones (then the loop is regenerated)."""
    return bool(
        request.kubelet_version or request.feature_gates or request.baseline is not None or request.overrides.given()
    )


def regenerates(rec: Recording, requests: Sequence[SettingsRequest]) -> bool:
    """Whether :func:`closed_loop_replay` has anything to regenerate for these requests on this recording."""
    return any(differs(r) for r in requests) and generated_with(rec) is not None


def variant_flags(request: SettingsRequest) -> list[str]:
    """The request's kubelet flags as ``scenario`` takes them (``--eviction-hard=…``, repeated map flags kept in
    order: the first replaces the field, later ones add to it, as in the replay). A ``--config`` document the
    scenario can take (:func:`document_flags`) comes first, as a kubelet's config file under its flags."""
    out = [f"{flag}={value}" for flag, value in request.overrides.flag_values()]
    document = document_flags(request.baseline.document) if request.baseline is not None else None
    if document:
        given = {_flag_name(f) for f in out}  # a flag replaces its field of the config file
        out = [f for f in document if _flag_name(f) not in given] + out
    return out


_DOCUMENT_FLAGS: Mapping[str, tuple[str, str, str]] = {
    # KubeletConfiguration field -> (scenario flag, pair separator, the value a config file without it means)
    "evictionHard": ("eviction-hard", "<", ""),
    "evictionSoft": ("eviction-soft", "<", ""),
    "evictionSoftGracePeriod": ("eviction-soft-grace-period", "=", ""),
    "evictionMinimumReclaim": ("eviction-minimum-reclaim", "=", ""),
    "kubeReserved": ("kube-reserved", "=", ""),
    "systemReserved": ("system-reserved", "=", ""),
    "evictionMaxPodGracePeriod": ("eviction-max-pod-grace-period", "", "0"),
    "evictionPressureTransitionPeriod": ("eviction-pressure-transition-period", "", "5m0s"),
    "enforceNodeAllocatable": ("enforce-node-allocatable", ",", "pods"),
}


def document_flags(document: Mapping[str, Any]) -> list[str] | None:
    """A ``--config`` KubeletConfiguration as the scenario's kubelet flags, every field it can take set (a field
    the file leaves out gets the kubelet's default, as a kubelet started with that file would): None when the
    document has a field the scenario's kubelet does not model, no ``evictionHard`` (its defaults depend on each
    node's version) or is a ``/configz`` response; such a variant replays the recording instead."""
    if "kubeletconfig" in document or not isinstance(document.get("evictionHard"), Mapping):
        return None
    if any(key not in (*_DOCUMENT_FLAGS, "apiVersion", "kind") for key in document):
        return None
    out = []
    for key, (flag, sep, default) in _DOCUMENT_FLAGS.items():
        value = document.get(key)
        if value is None:
            text = default
        elif isinstance(value, Mapping) and sep in ("<", "="):
            text = ",".join(f"{k}{sep}{v}" for k, v in value.items())
        elif isinstance(value, list) and sep == ",":
            text = ",".join(str(v) for v in value)
        elif not isinstance(value, Mapping | list) and not sep:
            text = str(value)
        else:
            return None
        out.append(f"--{flag}={text}")
    return out


def _flag_name(flag: str) -> str:
    return flag.lstrip("-").partition("=")[0]


def load_variant(gen: GeneratedWith, request: SettingsRequest) -> tuple[Scenario, list[str], str | None]:
    """The recording's scenario under a variant's settings: the generating overrides, then the variant's flags
    (each replacing its field, so a generating flag the variant also gives is dropped), its kubelet version."""
    from recordings.scenarios import parse_scenario

    mine = variant_flags(request)
    given = {_flag_name(f) for f in mine}
    flags = [f for f in gen.kubelet_flags if _flag_name(f) not in given] + mine
    version = request.kubelet_version or gen.kubelet_version
    with scratch_dir("evictlens-scenario-") as tmp:
        base = Path(tmp) / "scenario"
        base.mkdir()
        for name, data in gen.files.items():
            target = (base / name).resolve()
            if Path(tmp).resolve() not in target.parents:
                continue  # a name reaching outside: the loader says which file it cannot read
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            scenario = parse_scenario(
                gen.document, file=gen.file, base_dir=base, kubelet_version=version, kubelet_flags=flags
            )
        except InputError as err:
            raise InputError(f"cannot regenerate the recording's scenario with {request.label!r}: {err}") from None
    return scenario, flags, version


Replayer = Any
"""``(recording, requests, names) -> list[ReplayResult]``: the engine without the closed loop."""


def closed_loop_replay(
    rec: Recording, requests: Sequence[SettingsRequest], names: Sequence[str], replay: Replayer
) -> list[ReplayResult]:
    """One result per request: those asking for the recorded settings replay the recording; each other one runs
    the scenario again with its settings (:func:`run_scenario` into a temporary recording: evicted pods stop,
    controllers recreate) and replays that, so its evictions are exact. A regenerated result keeps the
    recording's ground truth (the generating kubelet's evictions) for its matches, has no horizon (nothing is
    modelled: the loop is closed) and says so in its notes and ``settings.closed_loop``. ``--config``/``--configz``
    variants cannot be put into a scenario: they replay the recording, said in their notes."""
    out: list[ReplayResult | None] = [None] * len(requests)
    plain = [
        i
        for i, r in enumerate(requests)
        if not differs(r) or (r.baseline is not None and document_flags(r.baseline.document) is None)
    ]
    if plain:
        for i, result in zip(plain, replay(rec, [requests[i] for i in plain], names), strict=True):
            if requests[i].baseline is not None:
                result = dataclasses.replace(
                    result,
                    notes=(
                        *result.notes,
                        (
                            "not regenerated from the scenario: a --config/--configz document cannot be put into it, "
                            "so this variant replays the recording (its generating kubelet's world) as any recording"
                        ),
                    ),
                )
            out[i] = result
    for i, request in enumerate(requests):
        if out[i] is not None:
            continue
        with scratch_dir("evictlens-closed-loop-") as tmp:
            again = regenerate(rec, request, Path(tmp) / "rec")
            (result,) = replay(again.recording, [again.request], names)
        out[i] = _as_closed_loop(rec, request, result, again.flags, again.version)
    return [r for r in out if r is not None]


def can_regenerate(rec: Recording, request: SettingsRequest) -> bool:
    """Whether this request's world is the recording's scenario run again (:func:`regenerate`): other settings
    than the generating ones, on a recording that keeps its scenario, and no ``--config`` document the scenario
    cannot take."""
    if not regenerates(rec, [request]):
        return False
    return request.baseline is None or document_flags(request.baseline.document) is not None


@dataclass(frozen=True)
class Regenerated:
    """The recording's scenario run again with a request's settings: the new recording, the request that
    replays it (the variant's settings are now the generating ones) and those settings as flags."""

    recording: Recording
    request: SettingsRequest
    flags: tuple[str, ...]
    version: str | None

    def describe(self) -> str:
        how = " ".join([*(f"--kubelet-version={self.version}",) * bool(self.version), *self.flags])
        return how or "the recorded settings"


def regenerate(rec: Recording, request: SettingsRequest, where: Path) -> Regenerated:
    """Run the recording's scenario again into ``where`` with the request's settings (the closed loop: evicted
    pods stop, controllers recreate, the kernel acts on what the kubelet leaves)."""
    from recordings.reader import open_recording

    gen = generated_with(rec)
    assert gen is not None
    scenario, flags, version = load_variant(gen, request)
    gates = {**gen.feature_gates, **request.feature_gates}
    run_scenario(scenario, where, feature_gates=gates or None, kubelet_flags=flags, kubelet_version=version)
    inner = dataclasses.replace(request, baseline=None, feature_gates=gates)
    return Regenerated(open_recording(where), inner, tuple(flags), version)


def _as_closed_loop(
    rec: Recording, request: SettingsRequest, result: ReplayResult, flags: Sequence[str], version: str | None
) -> ReplayResult:
    """A regenerated replay as a result of ``rec``: its ground truth, no horizon, the closed loop said."""
    from replay.collect import NOTES
    from replay.matching import admission_rejections, match, real_evictions, recording_interval

    how = " ".join([*(f"--kubelet-version={version}",) * bool(version), *flags]) or "the recorded settings"
    note = (
        f"{CLOSED_LOOP} ({how}): the scenario ran again with these settings and the kubelet's eviction "
        "manager inside the loop, so an evicted pod stops using anything and a controller-owned one is "
        'recreated; the evictions are exact, not modelled. The ground truth ("real") is still the recording\'s: '
        "the evictions its generating kubelet made"
    )
    dropped = {NOTES[1]}
    notes = (note, *(n for n in result.notes if n not in dropped and not n.startswith("--counterfactual")))
    matches = match(real_evictions(rec), result.evictions, recording_interval(rec))
    return dataclasses.replace(
        result,
        recording=str(rec.root),
        matches=matches,
        notes=notes,
        settings={**request.describe(), "digest": result.settings.get("digest"), "closed_loop": CLOSED_LOOP},
        nodes=tuple(dataclasses.replace(n, horizon=None, horizon_reason="") for n in result.nodes),
        admission_rejections=tuple(admission_rejections(rec)),
    )
