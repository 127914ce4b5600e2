"""``report.txt``: an incident's report for people, rendered from the same document as ``report.json``."""

from __future__ import annotations

from typing import Any

MI = 1024 * 1024


def _bytes(value: Any) -> str:
    if not isinstance(value, int):
        return "—"
    return f"{value} bytes ({value / MI:.1f}Mi)"


def headline(doc: dict[str, Any]) -> str:
    """The one log line (without the ``evictlens record:`` prefix)."""
    inc = doc["incident"]
    who = inc.get("who") or "?"
    line = f"incident {inc['kind']} {who} on {inc['node']} at {inc['time']}"
    if inc["kind"] == "Evicted":
        if doc.get("same_message"):
            line += ": predicted, same message byte for byte"
        elif doc.get("predicted"):
            line += ": predicted, the message differs"
        else:
            line += ": not predicted by the replay"
    else:
        cause = (doc.get("kernel") or {}).get("cause") or ""
        line += f": {cause.split(':', 1)[0]}" if cause else ""
        change = (doc.get("smallest_change") or {}).get("setting")
        if change:
            line += f"; smallest change {change}"
    return f"{line} → {doc['path']}"


def render(doc: dict[str, Any]) -> str:
    inc = doc["incident"]
    out = [headline(doc), ""]
    w = doc["window"]
    out.append(
        f"window: {inc['node']} from {w['from']} to {w['to']}"
        + ("" if w["complete"] else f" (the after-window ends {w['until']}: the pack is made again then)")
    )
    out.append(f"pack: {doc['pack']} (evictlens tui / replay / explain on it)")
    out.append(f"how far this holds: {doc['holds']}")
    s = doc.get("settings")
    if not s:
        return "\n".join([*out, f"no explanation: {doc.get('no_explanation')}"]) + "\n"
    out += ["", f"settings in force: kubelet {s['kubelet_version']} ({s['kubelet_version_source']})"]
    out.append(f"  {s['config_source']}")
    out += [f"  {t['threshold']}" for t in s["thresholds"]]
    out += [f"  {field} from {source}" for field, source in s["sources"].items()]
    if inc["kind"] == "Evicted":
        out += ["", "real message:", f"  {doc['real_message']!r}"]
        p = doc.get("predicted")
        if p:
            out += [
                "predicted message (the replay's eviction at " + f"{p['time']}, tick {p['tick']}):",
                f"  {p['message']!r}",
            ]
            out.append("same byte for byte" if doc["same_message"] else f"differs: {doc['why_not_same']}")
            if doc.get("message_diff"):
                out.append(f"  diff (real → predicted): {doc['message_diff']}")
        else:
            out.append(f"not predicted: {doc['why_not_same']}")
        if doc.get("ranking"):
            out += ["", "ranking at that pass (why each pod sat where it did):"]
            for r in doc["ranking"]:
                margin = f", margin {r['margin']}" if r.get("margin") is not None else ""
                out.append(f"  {r['rank']:>3} {r['pod']} [{r['qos']}] {r['decided_by']}{margin}: {r['why']}")
    else:
        k = doc["kernel"]
        out += ["", f"kernel: {k['kind']} of {inc.get('who')}", f"  cause: {k['cause']}"]
        if k.get("message"):
            out.append(f"  message: {k['message']!r}")
        if k.get("oom_score_adj") is not None:
            out.append(f"  oom_score_adj {k['oom_score_adj']} ({k.get('oom_score_adj_rule')}), QoS {k.get('qos')}")
        if "memory_limit" in k:
            out.append(
                f"  memory limit {_bytes(k.get('memory_limit'))}, last working set {_bytes(k.get('last_working_set'))}"
            )
        if k.get("note"):
            out.append(f"  {k['note']}")
        out.append("  memory.available at the passes before the kill:")
        for p in k["passes_before"]:
            out.append(
                f"    tick {p['tick']} {p['time']}: {_bytes(p['available'])}, "
                f"hard threshold {_bytes(p['hard_threshold'])}"
            )
        races = k["memory_ran_out_between_passes"]
        out.append(
            "  memory ran out between two passes: "
            + (
                "; ".join(f"{r['from']} → {r['to']} ({r['from_available']} → {r['to_available']} bytes)" for r in races)
                if races
                else "no"
            )
        )
        for e in doc.get("evictions_before") or []:
            out.append(f"  the replay evicted {e['pod']} at {e['time']} before the kill")
    c = doc.get("smallest_change")
    if c:
        out += ["", "smallest setting change:", f"  {c.get('setting') or 'none'}", f"  derived: {c['derived']}"]
        if c.get("engine_check"):
            out.append(f"  engine check: {c['engine_check']}")
        if c.get("holds"):
            out.append(f"  holds: {c['holds']}")
    out += ["", f"the pass explained: {doc['moment']}"]
    if doc.get("no_explanation"):
        out.append(f"  no explanation: {doc['no_explanation']}")
    text = doc.get("explanation_text") or ""
    return "\n".join(out) + "\n" + (("\n" + text) if text else "")
