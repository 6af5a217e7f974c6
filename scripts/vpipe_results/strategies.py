"""The memory strategies in the pipeline (vpipe bench pipeline, every strategy × staging, two
rounds), and bench mem's allocation latency and pinned against pageable staging."""
import re

from .common import floor_to, load_json, plural, span, table

MODES = [("decode_only", "decode only"), ("no_encoder", "no encoder"), ("end_to_end", "end to end")]


def pipeline_runs(s):
    return s.rounds_of("strategies", "pipeline")


def cells(runs, mem, host, mode, key="fps"):
    return [r[mode][key] for run in runs for r in run["rows"] if r["mem"] == mem and r["host"] == host]


def pipeline_section(s):
    runs = pipeline_runs(s)
    if not runs:
        return ["No `bench pipeline` run in this suite (see its steps)."]
    first = runs[0]
    frames = first["rows"][0]["end_to_end"]["frames"]["decoded"]
    keys = []
    for r in first["rows"]:
        if (r["mem"], r["host"]) not in keys:
            keys.append((r["mem"], r["host"]))
    body = []
    for mem, host in keys:
        e2e = [r["end_to_end"] for run in runs for r in run["rows"] if r["mem"] == mem and r["host"] == host]
        syncs = [(r["end_to_end"].get("memory") or {}).get("device_syncs", 0) for run in runs for r in run["rows"]
                 if r["mem"] == mem and r["host"] == host]
        body.append([f"`{mem}`", host] + [span(cells(runs, mem, host, m)) for m, _ in MODES] +
                    [f"{span([x['latency_ms']['p50'] for x in e2e])} / {span([x['latency_ms']['p99'] for x in e2e])}",
                     span(syncs)])
    out = [f"`vpipe bench pipeline` on a 1080p H.264 clip ({frames} frames: "
           f"{frames // first['loop']} frames read {first['loop']} times), chain `{first['filters']}`, NVDEC decode, libx264 veryfast; "
           f"{plural(len(runs), 'round')}{', ranges over them' if len(runs) > 1 else ''}. Decode only: the decoder into a null output; no encoder: the "
           "chain into a null output; end to end: into libx264.", ""]
    out += table(["strategy", "staging", *(f"{w} fps" for _, w in MODES), "end to end latency p50 / p99 ms",
                  "device syncs"], body)
    out += ["", f"libx264 alone on frames from memory, in the same runs: "
            f"{span([r['encode_only_fps'] for r in runs])} fps. " + staging_effect(runs, keys), "",
            f"Command: `scripts/gpu-suite strategies` (`vpipe bench pipeline CLIP --loop {first['loop']} --decode nvdec "
            "--mem naive,pool,vmm,slab,graph --host pinned,pageable`)."]
    return out


def staging_effect(runs, keys):
    """Pinned ÷ pageable end to end, same strategy and round."""
    ratios = []
    for run in runs:
        by = {(r["mem"], r["host"]): r["end_to_end"]["fps"] for r in run["rows"]}
        ratios += [by[(m, "pinned")] / by[(m, "pageable")] for m, h in keys
                   if h == "pinned" and (m, "pageable") in by]
    if not ratios:
        return ""
    return (f"Pinned staging against pageable, same strategy and round, end to end: {span(ratios, 2)}× "
            "(with NVDEC the frames stay on the device until the encoder's download).")


def latency_section(s):
    if not s.has("strategies", "mem-latency.json"):
        return ["No `bench mem` latency run in this suite (see its steps)."]
    d = load_json(s.file("strategies", "mem-latency.json"))
    names = []
    for r in d["latency"]:
        if r["strategy"] not in names:
            names.append(r["strategy"])
    body = []
    for n in names:
        rs = [r for r in d["latency"] if r["strategy"] == n]
        body.append([f"`{n}`", span([r["alloc_us"]["p50"] for r in rs], 2), span([r["free_us"]["p50"] for r in rs], 2),
                     span([r["alloc_us"]["p99"] for r in rs], 1), span([r["free_us"]["p99"] for r in rs], 1)])
    sizes = sorted({r["bytes"] for r in d["latency"]})
    out = [f"`vpipe bench mem --only latency`: allocate and free one buffer, {d['latency'][0]['n']} calls per size, "
           f"sizes {sizes[0]:,} B to {sizes[-1]:,} B; ranges over the sizes.", ""]
    return out + table(["strategy", "allocate p50 µs", "free p50 µs", "allocate p99 µs", "free p99 µs"], body) + [
        "", "Command: `scripts/gpu-suite strategies` (`vpipe bench mem --only latency`)."]


def staging_section(s):
    if not s.has("strategies", "mem-staging.json"):
        return ["No `bench mem` staging run in this suite (see its steps)."]
    d = load_json(s.file("strategies", "mem-staging.json"))
    body = [[r["size"], r["direction"], f"{r['raw_pinned_gbps']:.1f}", f"{r['ring_pinned_gbps']:.1f}",
             f"{r['ring_pinned_wc_gbps']:.1f}", f"{r['ring_pageable_gbps']:.1f}",
             f"{r['ring_pinned_gbps'] / r['ring_pageable_gbps']:.1f}×"] for r in d["staging"]]
    out = ["`vpipe bench mem --only staging`: one frame's copy through the staging ring, GB/s.", ""]
    out += table(["frame", "direction", "raw pinned copy", "ring, pinned", "ring, pinned write-combined",
                  "ring, pageable", "pinned ÷ pageable"], body)
    ratio = [r["ring_pinned_gbps"] / r["ring_pageable_gbps"] for r in d["staging"]]
    out += ["", f"The copy alone: pinned moves {span(ratio, 1)}× pageable's bytes per second. A whole transcode "
            "gains what section 2 shows, because other stages set its pace.", *ring_target_lines(d), "",
            "Command: `scripts/gpu-suite strategies` (`vpipe bench mem --only staging`)."]
    return out


def ring_target_lines(d):
    """The pinned ring against the raw pinned copy, and bench mem's own verdict on it (targets.ring_NNpct)."""
    key = next((k for k in d.get("targets", {}) if re.fullmatch(r"ring_\d+pct", k)), None)
    if key is None:
        return []
    goal = int(re.search(r"\d+", key).group())
    share = {f"{r['size']} {r['direction']}": 100 * r["ring_pinned_gbps"] / r["raw_pinned_gbps"] for r in d["staging"]}
    missed = [f"{what} ({floor_to(pct, 0):.0f} %)" for what, pct in share.items() if pct < goal]
    verdict = "met in every row" if d["targets"][key] else f"missed: {', '.join(missed) or 'see its log'}"
    return [f"The ring's pinned copy ran {span(list(share.values()))} % of the raw pinned copy's rate; "
            f"`bench mem`'s target, ≥ {goal} %, {verdict}."]
