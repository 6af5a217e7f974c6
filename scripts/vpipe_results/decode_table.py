"""Each codec's decode ceiling and what vpipe reaches of it (scripts/gpu-decode-table, issue #45):
the newest decode-table-* folder. Per clip, `vpipe bench decode --raw`'s JSON (the raw NVCUVID
probe, --streams N, one file with --decode-sessions K); a 5-minute-plus file decoded whole-process
with 1, auto and 7 sessions (long.jsonl and its reports); the encoder-bound case (encoder-bound/)."""
import glob
import os

from . import history
from .common import RESULTS, card, load_json, load_jsonl, median, newest_run, open_data, rel, run_commit, runs_of, span, table

CLIPS = [("h264-1080p", "H.264 8-bit", "1080p"), ("hevc-1080p", "HEVC 8-bit", "1080p"),
         ("hevc10-1080p", "HEVC 10-bit", "1080p"), ("h264-2160p", "H.264 8-bit", "4K"),
         ("hevc-2160p", "HEVC 8-bit", "4K"), ("hevc10-2160p", "HEVC 10-bit", "4K")]
ENGINES_PCT = 85    # NVML's decoder load, mean over the run, at or above which the engines are the bound
STARTUP_RATIO = 1.5  # steady ÷ whole at or above which start-up is the bound
CPU_SHARE = 0.85     # the process's CPU time ÷ (wall × cores) at or above which the CPU is the bound
# What a table's rounds ran besides the GPU: the programs' code, the build and media helpers, the
# scripts that run them. A folder's continues.txt names the earlier folder whose rounds it adds to;
# scripts/results --check finds none of these changed between the two commits (where git has them).
MEASURED_BY = [*history.CODE, "cmake", "media", "scripts/gpu-decode-table", "scripts/gpu-decode-encoder-bound",
               "scripts/devrt-env", "scripts/pack-gpu", "scripts/pack-codecs"]


def newest():
    """The newest decode-table folder with clip rounds (CLIP-rN.json): a later call may hold
    only the long file or the encoder-bound case, which their own sentences take."""
    return next((run for run in runs_of("decode-table") if glob.glob(os.path.join(run, "*-r[0-9]*.json"))),
                None)


def _from(part_run, run):
    """How a part's sentence names a folder other than the table's."""
    return "" if part_run == run else f" (`{rel(part_run)}`, commit {run_commit(part_run)}, on the {card(part_run)})"


def _pooled(run):
    """How the header names the earlier folders whose rounds the table adds (continues.txt)."""
    older = _lineage(run)[1:]
    return "".join(f"; with the rounds of `{rel(o)}`, commit {run_commit(o)}, on the {card(o)}" for o in older) + \
        (": the same programs and scripts (`continues.txt`; scripts/results --check finds no change to "
         "them in git between the commits)" if older else "")


def continuation_problems():
    """Each top-level decode-table folder's continues.txt: the folder it names is at the top level,
    on the same card, holds no round of the same name, and (where git has both commits) nothing
    in MEASURED_BY changed between them."""
    out = []
    for run in sorted(glob.glob(os.path.join(RESULTS, "decode-table-*"))):
        older, named = _continues(run), os.path.join(run, "continues.txt")
        if not older:
            continue
        if not os.path.isdir(older):
            out.append(f"{rel(named)}: no folder {rel(older)} at the top of docs/results")
            continue
        if card(older) != card(run):
            out.append(f"{rel(named)}: {rel(older)} ran on the {card(older)}, this run on the {card(run)}")
        clash = set(os.listdir(older)) & {f for f in os.listdir(run) if f.endswith(".json")}
        if clash:
            out.append(f"{rel(named)}: both folders hold {', '.join(sorted(clash))}")
        a, b = run_commit(older), run_commit(run)
        changed = history.git("diff", "--name-only", a, b, "--", *MEASURED_BY)
        if "-dirty" in a + b or changed:
            out.append(f"{rel(named)}: {a} and {b} are not the same programs and scripts "
                       f"({'a dirty build' if '-dirty' in a + b else changed.split()[0] + ' changed'})")
    return out


def _bound(row):
    """What held a row back: the engines (NVML busy), the CPU (every core busy; measured from the
    runs that record it), start-up (steady far above whole), else the host: work outside the
    engines that is neither (waits, locks)."""
    load = row.get("decoder_load") or {}
    if load.get("available") and load.get("mean_pct", 0) >= ENGINES_PCT:
        return "engines"
    cpu = row.get("cpu")
    if cpu and cpu["cores_busy"] >= CPU_SHARE * cpu["cores"]:
        return "CPU"
    if row["fps"] > 0 and row["steady_fps"] / row["fps"] >= STARTUP_RATIO:
        return "start-up"
    return "host"


def _cell(row):
    return f"{row['steady_fps']:,.0f} ({_bound(row)})"


def _auto_choice(note):
    """'3 (one session decodes …)' → '3'; an empty note (one decoder) → '1'."""
    return note.split("measured: ", 1)[-1].split(" ", 1)[0] if note else "1"


def _continues(run):
    """The folder RUN's continues.txt names (under docs/results), or None where it has none."""
    named = os.path.join(run, "continues.txt")
    if not os.path.exists(named):
        return None
    with open_data(named) as f:
        return os.path.join(RESULTS, f.read().strip())


def _lineage(run):
    """RUN, then the folder its continues.txt names, and so on: the folders whose rounds a table pools."""
    out = [run]
    while (older := _continues(out[-1])) and older not in out and os.path.isdir(older):
        out.append(older)
    return out


def _rounds(run, clip):
    """Every round's JSON of a clip over the run's lineage, oldest folder first: CLIP-rN.json (one
    a round), or CLIP.json (one round); each with its round's FFmpeg NVDEC probe
    (CLIP-rN-ffmpeg.json) as "ffmpeg_probe" where it ran."""
    return [d for folder in reversed(_lineage(run)) for d in _folder_rounds(folder, clip)]


def _folder_rounds(run, clip):
    paths = sorted(p for p in glob.glob(os.path.join(run, clip + "-r*.json"))
                   if not p.endswith("-ffmpeg.json")) or \
        [p for p in [os.path.join(run, clip + ".json")] if os.path.exists(p)]
    rounds = []
    for p in paths:
        d = load_json(p)
        ffmpeg = p[:-len(".json")] + "-ffmpeg.json"
        if os.path.exists(ffmpeg):
            d["ffmpeg_probe"] = load_json(ffmpeg)["probe"]
        rounds.append(d)
    return rounds


def _spans(rounds, pick, key, digits=0):
    """' / '-joined spans over the rounds of each row `pick(d)` gives, by `key`."""
    keys = sorted({k for d in rounds for k in pick(d)}, key=lambda k: (len(str(k)), str(k)))
    return " / ".join(span([pick(d)[k][key] for d in rounds if k in pick(d)], digits) for k in keys)


def _codec_row(codec, size, rounds):
    """One clip over its rounds: every figure a range; the bound is the first round's."""
    raw = lambda d: {r["sessions"]: r for r in d["probe"]}
    streams = lambda d: {r["streams"]: r for r in d["streams"]}
    seg = lambda d: {str(r["decode_sessions"]): r for r in d["segments"]}
    fracs, autos, ratios, bests = [], [], [], []
    for d in rounds:
        raw_best = max(r["steady_fps"] for r in d["probe"])
        many = max(d["streams"], key=lambda r: r["steady_fps"])
        fracs.append(many["steady_fps"] / raw_best if raw_best else 0)
        bests.append(f"{many['streams']} streams, {_bound(many)}")
        one, auto = seg(d).get("1"), seg(d).get("auto")
        if one and auto and one["fps"]:
            ratios.append(auto["fps"] / one["fps"])
            autos.append(_auto_choice(auto.get("note", "")))
    d0 = rounds[0]
    raw_cells = " / ".join(f"{span([raw(d)[k]['steady_fps'] for d in rounds], 0)} ({_bound(raw(d0)[k])})"
                           for k in sorted(raw(d0)))
    ffmpeg = lambda d: {r["sessions"]: r for r in d["ffmpeg_probe"]}
    ffmpeg_cells = _spans(rounds, ffmpeg, "steady_fps") if all("ffmpeg_probe" in d for d in rounds) \
        else "not measured"
    seg_cells = " / ".join(span([seg(d)[k]["fps"] for d in rounds if k in seg(d)], 0)
                           for k in ("1", "auto", "7") if k in seg(d0))
    chose = ", ".join(sorted(set(autos)))
    return [codec, size, f"{d0['probe'][0]['frames']:,}", raw_cells, ffmpeg_cells,
            _spans(rounds, streams, "steady_fps"),
            f"{span(fracs, 2)} ({'; '.join(sorted(set(bests)))})",
            seg_cells + (f"; auto chose {chose}, {span(ratios, 2, '×')} one" if ratios else "")], \
        min(fracs), ratios


def _codec_rows(run):
    rows, goals, rounds_seen, autos = [], [], set(), []
    for clip, codec, size in CLIPS:
        rounds = _rounds(run, clip)
        if not rounds:
            rows.append([codec, size] + ["not measured"] * 6)
            continue
        rounds_seen.add(len(rounds))
        row, worst, auto = _codec_row(codec, size, rounds)
        rows.append(row)
        goals.append(worst >= 0.95)
        autos += auto
    return rows, goals, rounds_seen, autos


def _losses(run):
    """Every clip round's drops beside its rates: streams that failed, decode errors, one-file
    runs whose timestamps differ from one session's."""
    rounds = [d for clip, _, _ in CLIPS for d in _rounds(run, clip)]
    streams = sum(r["streams"] for d in rounds for r in d["streams"])
    failed = sum(r["failed"] for d in rounds for r in d["streams"])
    errors = sum(r["errors"] for d in rounds for r in d["probe"]) + \
        sum(r["decode_errors"] for d in rounds for r in d["segments"])
    unlike = sum(not r["same_timestamps_as_first"] for d in rounds for r in d["segments"])
    return (f"Over every clip round: {streams:,} streams ran, {failed} failed; {errors} decode errors "
            f"(raw probe and one-file runs); {unlike} one-file runs with timestamps unlike one session's.")


def _streams_api(run):
    """Which NVDEC API each --streams count decoded with, over every clip round: each row's own
    (bench decode records it from 2026-12-05 on), else the run's --nvdec-api."""
    by = {}
    for d in (d for clip, _, _ in CLIPS for d in _rounds(run, clip)):
        for r in d["streams"]:
            by.setdefault(r["streams"], set()).update(r.get("nvdec_api") or [d.get("nvdec_api", "hwaccel")])
    groups = {}
    for n, apis in sorted(by.items()):
        groups.setdefault(" and ".join(sorted(apis)), []).append(str(n))
    return "; ".join(f"{', '.join(ns)}: {api}" for api, ns in groups.items())


def _long_rows(run):
    runs = load_jsonl(os.path.join(run, "long.jsonl"))
    by, chose = {}, {}
    for r in runs:
        rep = load_json(os.path.join(run, f"long-{r['decode_sessions']}-{r['round']}.json"))
        frames = rep["frames"]["video_packets_written"]
        by.setdefault(r["decode_sessions"], []).append((r["round"], frames / r["whole_s"], rep))
        for n in rep["notes"]:
            if "decode_sessions auto" in n:
                chose[r["round"]] = n.split(": ", 1)[1]
    one = {k: fps for k, fps, _ in by.get("1", [])}
    rows, met = [], []
    for s in ("1", "auto", "7"):
        mine = by.get(s, [])
        ratios = [fps / one[k] for k, fps, _ in mine if k in one]
        if ratios and min(ratios) >= 3:
            met.append(f"--decode-sessions {s} ({span(ratios, 2, '×')})")
        rows.append([s, span([fps for _, fps, _ in mine], 0), span(ratios, 2, "×"),
                     span([rep["latency_ms"]["p50"] for _, _, rep in mine], 0, " ms")])
    frames = by["1"][0][2]["frames"]["video_packets_written"] if by.get("1") else 0
    return rows, frames, chose, met


def _encoder_bound_rows(run):
    sub = os.path.join(run, "encoder-bound")
    runs = load_jsonl(os.path.join(sub, "runs.jsonl"))
    one = {r["round"]: r["whole_s"] for r in runs if r["decode_sessions"] == "1"}
    rows = []
    for s in ("1", "auto", "4"):
        mine = [r for r in runs if r["decode_sessions"] == s]
        reps = [load_json(p) for p in (os.path.join(sub, f"{s}-{r['round']}.json") for r in mine)
                if os.path.exists(p)]
        cpu = [r["user_s"] + r["sys_s"] for r in mine if "user_s" in r]
        rows.append([s, span([r["whole_s"] for r in mine], 1, " s"),
                     span([one[r["round"]] / r["whole_s"] for r in mine if r["round"] in one], 2, "×"),
                     span([rep["latency_ms"]["p50"] for rep in reps], 0, " ms"),
                     span(cpu, 1, " s") if cpu else "not recorded"])
    return rows


def section(_suite):
    run = newest()
    if not run:
        return ["No `scripts/gpu-decode-table codecs` run in docs/results/."] + [""] + sessions_section()
    commit = run_commit(run)
    rows, goals, rounds, autos = _codec_rows(run)
    n = "/".join(str(k) for k in sorted(rounds)) or "0"
    spread = "one round: not a range" if n == "1" else f"{n} round(s) a clip: every figure the range over them"
    out = [f"`scripts/gpu-decode-table` (`{rel(run)}`, commit {commit}, on the {card(run)}{_pooled(run)}, {spread}): clips made by `scripts/pack-codecs` (the sample's moving "
           "content with grain, GOP 30), read over so that each session or stream decodes the frames "
           "given, `vpipe bench decode --raw`, `--vf resize=1280x720`, output null; its one-file runs "
           "(--decode-sessions 1, auto, 7) run one after another in one process. Steady fps: frames after each "
           "session's or stream's first 30, summed. Raw: NVCUVID directly (NVIDIA's parser and decoder per "
           "session, every frame mapped and unmapped). FFmpeg's NVDEC alone: the same clip through FFmpeg's "
           "hwaccel as vpipe opens it, packets from memory, frames dropped, no pipeline. The bound beside a figure: *engines* where NVML's "
           f"decoder load averaged {ENGINES_PCT} % or more, *CPU* where the process's CPU time was "
           f"{CPU_SHARE * 100:.0f} % or more of every core's (in runs that record it), *start-up* where the "
           f"steady rate is {STARTUP_RATIO}× the whole-run rate or more, else *host* (work outside the "
           "engines: waits or locks; the CPU too in runs that did not record it). FFmpeg's NVDEC API "
           f"in the --streams rows (`--nvdec-api`), by stream count: {_streams_api(run)}.", ""]
    out += table(["codec", "size", "frames a stream", "raw NVCUVID, 1 / 7 / 14 sessions",
                  "FFmpeg's NVDEC alone, 1 / 7 / 14 sessions",
                  "vpipe --streams 1 / 7 / 14 / 21 / 28", "best streams ÷ raw best",
                  "one file, --decode-sessions 1 / auto / 7, whole fps"], rows)
    out += ["", f"Goal ≥ 0.95 of the raw ceiling with many streams, in every round: met for {sum(goals)} "
            f"of {len(goals)} clips. Auto ≥ 0.98× one session's whole-run rate (one file): met in "
            f"{sum(a >= 0.98 for a in autos)} of {len(autos)} clip rounds. " + _losses(run), ""]
    long_run = newest_run("decode-table", holding="long.jsonl")
    if not long_run:
        out += sessions_section()
    else:
        lrows, frames, chose, met = _long_rows(long_run)
        out += ["", f"**One long file**{_from(long_run, run)} ({frames:,} frames, over 5 minutes at 30 fps; made on the machine "
                "from the 10-s 1080p sample with libx264, GOP 60), `transcode FILE null --decode nvdec "
                "--vf resize=1280x720`, whole-process, every round:", ""]
        out += table(["--decode-sessions", "whole-process fps", "÷ one session", "p50 latency"], lrows)
        out += ["", "What auto chose, by round: " + "; ".join(f"{k}: {v}" for k, v in sorted(chose.items())) + "."
                if chose else "", "Goal: ≥ 3× one session whole-process, in every round: met by " +
                (", ".join(met) if met else "none") + "."]
    enc_run = newest_run("decode-table", holding=os.path.join("encoder-bound", "runs.jsonl"))
    if enc_run:
        out += ["", f"**The encoder-bound case**{_from(enc_run, run)} (issue #45: the 10-s 1080p sample read 5 times → "
                "`resize=640x360` → ffv1), whole-process, every round:", ""]
        out += table(["--decode-sessions", "whole-process", "one session ÷ this (≥ 0.98: no slower)",
                      "p50 latency", "CPU seconds, user + system"], _encoder_bound_rows(enc_run))
        runs = load_jsonl(os.path.join(enc_run, "encoder-bound", "runs.jsonl"))
        one = {r["round"]: r["whole_s"] for r in runs if r["decode_sessions"] == "1"}
        auto = [one[r["round"]] / r["whole_s"] for r in runs
                if r["decode_sessions"] == "auto" and r["round"] in one]
        ok = sum(a >= 0.98 for a in auto)
        med = {k: median(r["whole_s"] for r in runs if r["decode_sessions"] == k)
               for k in ("1", "auto")}
        out += ["", f"Goal: auto no slower than one session (≥ 0.98×): met in {ok} of {len(auto)} rounds; "
                f"the medians over the rounds, one session {med['1']:.1f} s and auto {med['auto']:.1f} s, "
                f"give {med['1'] / med['auto']:.2f}×."]
        out += _encoder_bound_choice(enc_run, runs)
    out += _where_section() + _resize_section() + _ab_section() + _tenbit_section() + _stage_run_section() + _fold_section() + _stages_section() + _rows_section() + _phases_section() + _api_section() + _mem_section(run) + _threads_section() + _queues_section() + _surfaces_section() + _why_section()
    return out


def _encoder_bound_choice(run, runs):
    """Whether auto's encoder-bound runs were one session's pipeline (the plain decoder throughout)."""
    reps = [load_json(p) for p in (os.path.join(run, "encoder-bound", f"auto-{r['round']}.json")
                                   for r in runs if r["decode_sessions"] == "auto") if os.path.exists(p)]
    plain = sum(any(n.startswith("decode: one session (the plain decoder)") for n in rep["notes"])
                for rep in reps)
    if not reps or plain != len(reps):
        return []
    ones = [r["whole_s"] for r in runs if r["decode_sessions"] == "1"]
    one_reports = [os.path.join(run, "encoder-bound", f"1-{r['round']}.json")
                   for r in runs if r["decode_sessions"] == "1"]
    busy = [st["busy_s"] for p in one_reports if os.path.exists(p)
            for st in load_json(p)["stages"] if st["name"] == "encode"]
    return [f"In {plain} of {len(reps)} rounds auto decoded every frame with the plain decoder, "
            "which is --decode-sessions 1: the two rows ran the same pipeline, so their difference "
            f"is between runs (one session alone took {span(ones, 1, ' s')}, its encoder busy "
            f"{span(busy, 1, ' s')} of it: the same frames encoded at the machine's speed of the moment)."
            + _cpu_per_wall(runs)]


def _cpu_per_wall(runs):
    """Each configuration's CPU seconds (user + system) per wall second, over the runs that record
    them: equal ones say the two did the same work at the same pace, the time going with the CPU's."""
    per = {k: [(r["user_s"] + r["sys_s"]) / r["whole_s"] for r in runs
               if r["decode_sessions"] == k and "user_s" in r and r["whole_s"] > 0] for k in ("1", "auto")}
    if not per["1"] or not per["auto"]:
        return ""
    cpu = [r["user_s"] + r["sys_s"] for r in runs if r["decode_sessions"] in ("1", "auto") and "user_s" in r]
    return (f" CPU seconds per wall second: one session {span(per['1'], 2)}, auto {span(per['auto'], 2)}; "
            f"the same job took {span(cpu, 1, ' s')} of CPU from run to run.")


def _where_section():
    """The newest decode-where-* folder (scripts/gpu-decode-where): per clip, `bench decode
    --raw` with no filter (frames left on the device: decode alone through the pipeline) and with
    resize (then the download)."""
    run = newest_run("decode-where")
    if not run:
        return []
    commit = run_commit(run)
    rows, streams, failed, errors = [], "", 0, 0
    for clip, codec, size in CLIPS:
        paths = [os.path.join(run, f"{clip}{tail}.json") for tail in ("", "-resize")]
        if not all(os.path.exists(p) for p in paths):
            continue
        bare, resized = (load_json(p) for p in paths)
        failed += sum(r["failed"] for d in (bare, resized) for r in d["streams"])
        errors += sum(r["errors"] for d in (bare, resized) for r in d["probe"])
        streams = "/".join(str(r["streams"]) for r in bare["streams"])
        raw = max(r["steady_fps"] for r in bare["probe"] + resized["probe"])
        best = lambda d: max(r["steady_fps"] for r in d["streams"])
        cells = lambda d: " / ".join(f"{r['steady_fps']:,.0f}" for r in d["streams"])
        rows.append([f"{codec} {size}", f"{raw:,.0f}", cells(bare), cells(resized),
                     f"{best(bare) / raw:.2f} / {best(resized) / raw:.2f}",
                     f"{max(r['cpu']['cores_busy'] for r in resized['streams']):.1f} of "
                     f"{resized['streams'][0]['cpu']['cores']}"])
    if not rows:
        return []
    out = ["", f"Where the rest goes (`{rel(run)}`, commit {commit}, one call, one round: not a range): "
           f"`bench decode --raw` per clip with --streams {streams} twice, with no filter (the frames "
           "stay on the device: decode alone through the pipeline) and with `--vf resize=1280x720` "
           "(as above: the resize, then each frame downloaded for the null output). Raw: the higher "
           "of the two calls' 14-session probe. Beside the FFmpeg column above, it parts the gap "
           "into FFmpeg's hwaccel, the pipeline around decode, and the resize with its download.", ""]
    return out + table(["clip", "raw NVCUVID, 14 sessions", f"--streams {streams}, decode only",
                        f"--streams {streams}, resize + download", "best ÷ raw: decode only / resize",
                        "CPU cores busy, most (resize)"], rows) + \
        ["", f"Over the run: {failed} streams failed in the --streams runs; {errors} decode errors in the raw probe."]


def _resize_rows(run):
    """Per clip and decoder threads (CLIP-tT-rR.json, bench decode --streams with the resize):
    each --streams count's steady fps, the range over the rounds, and the streams that failed."""
    found = {}
    for path in glob.glob(os.path.join(run, "*-t*-r*.json")):
        clip, rest = os.path.basename(path)[:-len(".json")].rsplit("-t", 1)
        found.setdefault((clip, int(rest.split("-r")[0])), []).append(load_json(path))
    rows = []
    for clip, codec, size in CLIPS:
        for (c, threads), runs in sorted(found.items()):
            if c != clip:
                continue
            counts = sorted({r["streams"] for d in runs for r in d["streams"]})
            cells = [span([r["steady_fps"] for d in runs for r in d["streams"] if r["streams"] == n])
                     for n in counts]
            rows.append([f"{codec} {size}", str(threads), "/".join(map(str, counts)), " / ".join(cells),
                         str(len(runs)), str(sum(r["failed"] for d in runs for r in d["streams"]))])
    return rows


def _resize_section():
    """The newest decode-resize-* folder: the where run's resize rows measured again."""
    run = newest_run("decode-resize")
    rows = _resize_rows(run) if run else []
    if not rows:
        return []
    out = ["", f"The resize rows again (`{rel(run)}`, commit {run_commit(run)}, one call on a new machine "
           "start, rounds alternating the decoder threads: ranges over them; no raw probe in this call): "
           "`bench decode --streams … --vf resize=1280x720`, output null. Where the where run above is at "
           "the same commit, its resize rows and these differ between calls of one build: read the "
           "many-stream resize figures as a band, not a point.", ""]
    return out + table(["clip", "decoder threads", "streams", "steady fps (sum)", "rounds", "failed"], rows)


def _ab_rows(run, chains=("resize",)):
    """Per ab-CHAIN-CLIP folder of a gpu-ab run (BUILD-rR.json, `bench decode --streams`): each
    --streams count's steady fps per build, the range over the rounds, head ÷ base paired round by
    round, and the streams that failed. With more than one chain each row names its --vf."""
    rows = []
    for chain in chains:
        for clip, codec, size in CLIPS:
            sub = os.path.join(run, f"ab-{chain}-{clip}")
            runs = {os.path.basename(p)[:-len(".json")]: load_json(p)
                    for p in glob.glob(os.path.join(sub, "*-r*.json"))}
            rounds = sorted({k.split("-r", 1)[1] for k in runs})
            paired = [r for r in rounds if f"head-r{r}" in runs and f"base-r{r}" in runs]
            if not paired:
                continue
            label = f"{codec} {size}" + \
                (f", {runs[f'head-r{paired[0]}']['filters']}" if len(chains) > 1 else "")
            fps = lambda b, r, n: _streams_fps(runs[f"{b}-r{r}"], n)
            for n in sorted({x["streams"] for d in runs.values() for x in d["streams"]}):
                rows.append([label, str(n), span([fps("base", r, n) for r in paired]),
                             span([fps("head", r, n) for r in paired]),
                             span([fps("head", r, n) / fps("base", r, n) for r in paired], 2),
                             str(len(paired)),
                             str(sum(x["failed"] for d in runs.values() for x in d["streams"]
                                     if x["streams"] == n))])
    return rows


def _ab_run_section(prefix, chains, text):
    """The newest PREFIX* folder of a gpu-ab run: text(run, base) as its paragraph (base: gpu-ab's own
    record, in each of its folders), then _ab_rows' table."""
    run = newest_run(prefix)
    rows = _ab_rows(run, chains) if run else []
    if not rows:
        return []
    with open_data(sorted(glob.glob(os.path.join(run, "ab-*", "base.txt")))[0]) as f:
        base = f.read().strip()
    return ["", text(run, base), ""] + \
        table(["clip", "streams", "base steady fps (sum)", "head steady fps (sum)", "head ÷ base",
               "rounds", "failed"], rows)


_AB_HOW = ("rounds alternate which build runs first; ranges over the rounds, head ÷ base paired by "
           "round)")


def _stage_run_section():
    """The newest stage-run-ab-* folder: a run of CUDA filters as one stage (head) against a
    stage per CUDA filter (base), alternating on one machine start."""
    return _ab_run_section("stage-run-ab", ("resize", "resize-blur"), lambda run, base: (
        f"A run of consecutive CUDA filters as one stage (`{rel(run)}`, `scripts/gpu-ab`, one "
        f"call: head {run_commit(run)}, one stage a run, a launch per kernel; base {base}, a stage "
        f"per CUDA filter, each with its thread, stream, event and cross-stream wait a frame; {_AB_HOW}: "
        "`bench decode CLIP --streams 14,21 --vf CHAIN`, output null. HEVC 10-bit's resize is two "
        "CUDA filters (`to_8bit`, then the resize), resize + blur is two; HEVC 8-bit's resize alone "
        "is one filter, one stage in both builds: the control."))


def _fold_section():
    """The newest download-fold-ab-* folder: the download as the CUDA run's stage's last step
    (head) against a stage of its own (base), alternating on one machine start."""
    return _ab_run_section("download-fold-ab", ("resize",), lambda run, base: (
        f"The download as the CUDA run's last step (`{rel(run)}`, `scripts/gpu-ab` on the {card(run)}, one "
        "machine start, a call a clip: "
        f"head {run_commit(run)}, the run's stage downloads each frame on its own stream; base "
        f"{base}, a download stage of its own, with its thread, stream, event and cross-stream wait "
        f"a frame; {_AB_HOW}: `bench decode CLIP --streams 14,21 --vf resize=1280x720`, output null "
        "(a null output after a filter downloads, as an encoder's would)."))


def _ab_section():
    """The newest decode-ab-* folder: the resize rows with the build before the NVDEC copy
    (base) and this one (head), alternating on one machine start."""
    return _ab_run_section("decode-ab", ("resize",), lambda run, base: (
        f"Whether copying each NVDEC frame out costs the resize path (`{rel(run)}`, `scripts/gpu-ab`, "
        f"one call: head {run_commit(run)}, base {base}, the last build before the copy, which held each "
        "NVDEC frame's surface until the pipeline let the frame go and asked queue depth + 3 surfaces; "
        f"{_AB_HOW}: `bench decode CLIP --streams … --vf resize=1280x720`, output null, the default "
        "queue depth."))


def _stage_rows(path):
    """A transcode --streams report: each stage's busy share of its stream's
    wall time (the least, the mean and the most over the streams), and its host and GPU ms a frame
    (the mean over the streams; GPU: sampled CUDA events, CUDA filter stages only)."""
    rep = load_json(path)
    mean = lambda xs: sum(xs) / len(xs)
    rows = []
    for stage in (x["name"] for x in rep["streams"][0]["stages"]):
        shares = [_stage_s(stage)(st) / st["wall_s"] for st in rep["streams"] if st["wall_s"] > 0]
        of = [x for st in rep["streams"] for x in st["stages"] if x["name"] == stage]
        gpu = [x["gpu_ms_per_item"] for x in of if x.get("gpu_ms_per_item") is not None]
        rows.append([stage, f"{min(shares):.2f}", f"{mean(shares):.2f}", f"{max(shares):.2f}",
                     f"{mean([x['busy_ms_per_item'] for x in of]):.2f}",
                     f"{mean(gpu):.3f}" if gpu else "–"])
    return rows, rep


def _tenbit_section():
    """The newest decode-tenbit-* folder: where the HEVC 10-bit resize rows lose (the bench
    rows again on another machine start, and one transcode report's stage shares)."""
    run = newest_run("decode-tenbit")
    if not run:
        return []
    rows, rep = _stage_rows(os.path.join(run, "tr14.json"))
    benches = {os.path.basename(p)[:-len(".json")]: load_json(p)
               for p in sorted(glob.glob(os.path.join(run, "*-r*.json")))}
    raw = [_probe_fps(d, 14) for d in benches.values() if d.get("raw_probe") == "nvcuvid"]
    fps = lambda n: span([_streams_fps(d, n) for d in benches.values()])
    cores = max(r["cpu"]["cores_busy"] for d in benches.values() for r in d["streams"])
    failed = sum(r["failed"] for d in benches.values() for r in d["streams"])
    errors = sum(r["errors"] for d in benches.values() for r in d["probe"])
    agg = rep["aggregate"]
    return ["", f"Where the HEVC 10-bit 1080p resize rows lose (`{rel(run)}`, commit {run_commit(run)}, one "
            f"call on another machine start): {len(benches)} `bench decode --vf resize=1280x720` runs "
            f"(the table's, with the raw probe first, and the A/B's) gave --streams 14 {fps(14)} and 21 "
            f"{fps(21)} steady fps beside the raw probe's 14 sessions at {span(raw)}, at most {cores:.1f} "
            f"of {benches[next(iter(benches))]['streams'][0]['cpu']['cores']} cores busy ({failed} streams "
            f"failed, {errors} decode errors in the probes). Then "
            f"`transcode CLIP null --streams 14 --loop 10 --vf resize=1280x720` ({agg['streams']} streams, "
            f"{agg['failed']} failed, {agg['frames_dropped']} frames dropped): for 10-bit input the chain "
            "puts `to_8bit` (P010 to NV12) in front of the resize, at that commit a CUDA stage of its own "
            "that 8-bit input does not have (each CUDA filter was a stage then). Each stage's busy share of its stream's wall time over the streams, and its host "
            "time a frame (busy) beside the GPU time of its kernels (sampled CUDA events):", ""] + \
        table(["stage", "busy share, least", "mean", "most", "busy ms a frame", "GPU ms a frame"], rows)


def _stages_rows(run):
    """A decode-stages run (scripts/gpu-decode-where --stages): per clip the raw probe's 14 and 21
    sessions, then `transcode --streams N` with --graphs off and on, each the range over the rounds
    of its streams' steady fps summed, with the streams that failed."""
    rows = []
    for clip, codec, size in CLIPS:
        raw_path = os.path.join(run, f"{clip}-raw.json")
        if not os.path.exists(raw_path):
            continue
        raw = load_json(raw_path)
        cells, failed = [], 0
        for g in ("off", "on"):
            for n in (14, 21):
                reps = [load_json(p) for p in sorted(glob.glob(os.path.join(run, f"{clip}-g{g}-s{n}-r*.json")))]
                cells.append(span([sum(st["steady_fps"] for st in r["streams"]) for r in reps]))
                failed += sum(r["aggregate"]["failed"] for r in reps)
        rows.append([f"{codec} {size}", f"{_probe_fps(raw, 14):,.0f} / {_probe_fps(raw, 21):,.0f}",
                     f"{cells[0]} / {cells[1]}", f"{cells[2]} / {cells[3]}", str(failed)])
    return rows


def _stages_section():
    """The newest decode-stages-* folder: the resize rows through `transcode --streams` with
    --graphs off and on, and where one 10-bit run's time went stage by stage."""
    run = newest_run("decode-stages")
    rows = _stages_rows(run) if run else []
    if not rows:
        return []
    report = os.path.join(run, "hevc10-1080p-goff-s14-r1.json")
    out = ["", f"The resize rows through `transcode` (`{rel(run)}`, commit {run_commit(run)}, "
           "`scripts/gpu-decode-where --stages`, one call: the raw probe, then `transcode CLIP null "
           "--streams N --loop 10 --vf resize=1280x720 --graphs off|on`; steady fps summed over the "
           "streams):", ""]
    out += table(["clip", "raw NVCUVID, 14 / 21 sessions", "--graphs off, 14 / 21 streams",
                  "--graphs on, 14 / 21 streams", "failed"], rows)
    if os.path.exists(report):
        stage_rows, rep = _stage_rows(report)
        out += ["", f"HEVC 10-bit with --graphs off, 14 streams ({rep['aggregate']['failed']} failed, "
                f"{rep['aggregate']['frames_dropped']} frames dropped), each stage's busy share of its "
                "stream's wall time, its host time a frame and its kernels' GPU time a frame, as in "
                "the 10-bit table above:", ""]
        out += table(["stage", "busy share, least", "mean", "most", "busy ms a frame", "GPU ms a frame"],
                     stage_rows)
    return out


def _rows_section():
    """The newest decode-rows-* folder: some clips of the table measured again at a later
    commit (gpu-decode-table codecs with CLIPS), in the table's columns."""
    run = newest_run("decode-rows")
    if not run:
        return []
    rows, goals = [], []
    for clip, codec, size in CLIPS:
        rounds = _rounds(run, clip)
        if rounds:
            row, worst, _ = _codec_row(codec, size, rounds)
            rows.append(row)
            goals.append(f"{codec} {size} {'met' if worst >= 0.95 else 'not met'}")
    if not rows:
        return []
    n = "/".join(sorted({str(len(_rounds(run, c))) for c, _, _ in CLIPS if _rounds(run, c)}))
    return ["", f"Those rows again (`{rel(run)}`, commit {run_commit(run)}, `CLIPS=\"…\" "
            f"scripts/gpu-decode-table codecs`, {n} rounds, one call, the table's columns):", ""] + \
        table(["codec", "size", "frames a stream", "raw NVCUVID, 1 / 7 / 14 sessions",
               "FFmpeg's NVDEC alone, 1 / 7 / 14 sessions", "vpipe --streams 1 / 7 / 14 / 21 / 28",
               "best streams ÷ raw best", "one file, --decode-sessions 1 / auto / 7, whole fps"], rows) + \
        ["", "Goal ≥ 0.95 of the raw ceiling in every round: " + "; ".join(goals) + ". " + _losses(run)]


PHASES = ("send", "receive", "copy", "emit")


def _log_phase_means(log_path):
    """The `decode phases` lines of an experiment build's log (one a stream): each phase's ms a
    frame, the mean over the streams, in the order of PHASES."""
    with open_data(log_path) as f:
        lines = [line.split("ms a frame:", 1)[1].split() for line in f if "decode phases:" in line]
    phases = [[float(words[i + 1]) for i in range(0, 8, 2)] for words in lines]
    return [sum(col) / len(col) for col in zip(*phases)] if phases else []


def _phase_means(streams, log_path):
    """Each phase's ms a frame, the mean over the streams: from the reports' decode stages where
    the build times them (`phases_ms_per_item`, steady state; no `emit`: None), else from the
    experiment build's log."""
    timed = [x["phases_ms_per_item"] for st in streams for x in st["stages"]
             if x["name"] == "decode" and "phases_ms_per_item" in x]
    if not timed:
        return _log_phase_means(log_path) if os.path.exists(log_path) else []
    return [sum(t[p] for t in timed) / len(timed) if p in timed[0] else None for p in PHASES]


def _phases_rows(run):
    """A row per clip, stream count and --vf: every round's value as a range (files NAME.json,
    or NAME-rR.json for rounds)."""
    rows = []
    for clip, codec, size in CLIPS:
        for n in (1, 14):
            for vf in ("", "-resize"):
                stem = os.path.join(run, f"{clip}-s{n}{vf}")
                paths = sorted(glob.glob(stem + ".json") + glob.glob(stem + "-r[0-9]*.json"))
                if not paths:
                    continue
                fps, busy, means = [], [], []
                for path in paths:
                    rep = load_json(path)
                    streams = rep["streams"] if "aggregate" in rep else [rep]
                    fps.append(sum(st["steady_fps"] for st in streams))
                    b = [x["busy_ms_per_item"] for st in streams for x in st["stages"] if x["name"] == "decode"]
                    busy.append(sum(b) / len(b))
                    means.append(_phase_means(streams, path[:-len(".json")] + ".log"))
                rows.append([f"{codec} {size}", str(n), "resize=1280x720" if vf else "none", span(fps),
                             span(busy, 2)] + [span([m[i] if m else None for m in means], 3)
                                               for i in range(len(PHASES))])
    return rows


def _phases_section():
    """The newest decode-phases-* folder: the decode stage's calls timed, one stream against
    14 (an experiment build's log, or the report's phases where the build times them)."""
    run = newest_run("decode-phases")
    rows = _phases_rows(run) if run else []
    if not rows:
        return []
    if run_commit(run).endswith("-dirty"):
        how = (f"an experiment build: commit {run_commit(run)}, the folder's `decode-phases.patch` "
               "applied; one call): `transcode CLIP null --streams N --loop 10 --vf VF --report`. Each "
               "call of the stage timed, its mean a frame over all of a stream's frames (the decoders' "
               "set-up in the first `send` counts), then the mean over the streams")
    else:
        how = (f"commit {run_commit(run)}, `scripts/gpu-decode-where --phases`, one call, every round's "
               "value as a range): `transcode CLIP null --streams N --loop 10 --vf VF --report`. The "
               "report's decode phases (the stage's calls timed after its first 30 frames), the mean "
               "over the streams; `emit` is not timed there (the queue's blocked time is)")
    return ["", f"Where the decode stage's time goes (`{rel(run)}`, {how}; with FFmpeg's NVDEC decoder "
            "`send` holds the decode (decode, map, copy, unmap), `receive` hands over the frame made, "
            "`copy` is vpipe's copy out of FFmpeg's frame, `emit` the hand-off to the next queue.", ""] + \
        table(["clip", "streams", "--vf", "steady fps (sum)", "decode busy ms a frame", "send ms",
               "receive ms", "copy ms", "emit ms"], rows)


def _mem_section(table_run):
    """The newest decode-mem-* folder: `bench decode --streams 14,21` per clip and --mem
    strategy in one call (CLIP-MEM.json), beside the table's own --streams 14 / 21 (pool) rounds."""
    run = newest_run("decode-mem")
    if not run:
        return []
    commit = run_commit(run)
    rows, streams = [], ""
    same_card = card(run) == card(table_run)  # figures from two cards are not set side by side
    for clip, codec, size in CLIPS:
        rounds = _rounds(table_run, clip)
        for path in sorted(glob.glob(os.path.join(run, f"{clip}-*.json"))):
            mem = path[len(os.path.join(run, clip)) + 1:-len(".json")]
            d = load_json(path)
            by = {r["streams"]: r for r in d["streams"]}
            keys = sorted(by)
            streams = " / ".join(str(k) for k in keys)
            table_cell = " / ".join(
                span([r["steady_fps"] for x in rounds for r in x["streams"] if r["streams"] == k], 0)
                for k in keys) if rounds and mem == "pool" and same_card else "–"
            rows.append([f"{codec} {size}", mem, " / ".join(f"{by[k]['steady_fps']:,.0f}" for k in keys),
                         table_cell, " / ".join(f"{by[k]['decoder_load']['mean_pct']:.0f}" for k in keys),
                         " / ".join(f"{by[k]['cpu']['cores_busy']:.1f}" for k in keys)])
    if not rows:
        return []
    table_note = (f"The decode table's own rounds (pool) ran in other calls, at commit {run_commit(table_run)}."
                  if same_card else f"The decode table above ran on the {card(table_run)}, this on the "
                  f"{card(run)}: the table's column is left empty, not filled from the other card.")
    return ["", f"By memory strategy (`{rel(run)}`, commit {commit}, on the {card(run)}, one call, one round: "
            f"not a range): `bench decode --streams {streams} --vf resize=1280x720 --mem MEM`. {table_note}", ""] + \
        table(["clip", "--mem", f"--streams {streams}, steady fps", f"the table's rounds, --streams {streams}",
               "NVDEC load mean %", "CPU cores busy"], rows)


def _probe_fps(d, sessions):
    return next(r["steady_fps"] for r in d["probe"] if r["sessions"] == sessions)


def _streams_fps(d, streams):
    return next(r["steady_fps"] for r in d["streams"] if r["streams"] == streams)


def _variant_rows(run, clip, codec, size, variants):
    """One clip's rows: the raw probe (CLIP-rR-raw.json), then each (label, suffix) of `variants`
    (CLIP-rR-SUFFIX.json), every figure the range over the rounds, each ratio (in brackets) of the
    same round's raw probe."""
    raws = {p[len(os.path.join(run, clip)) + 2:-len("-raw.json")]: load_json(p)
            for p in glob.glob(os.path.join(run, f"{clip}-r*-raw.json"))}
    if not raws:
        return []
    rows = [[f"{codec} {size}", "raw NVCUVID",
             " / ".join(span([_probe_fps(d, k) for d in raws.values()]) for k in (1, 14)), "–", "–"]]
    for label, suffix in variants:
        runs = {r: load_json(p) for r in raws
                if os.path.exists(p := os.path.join(run, f"{clip}-r{r}-{suffix}.json"))}
        if not runs:
            continue

        def cell(fps, raw_sessions):
            """fps(d) over the rounds, and ÷ the round's raw probe with raw_sessions sessions."""
            return (f"{span([fps(d) for d in runs.values()])} "
                    f"({span([fps(d) / _probe_fps(raws[r], raw_sessions) for r, d in runs.items()], 2)})")
        alone = " / ".join(cell(lambda d, k=k: _probe_fps(d, k), k) for k in (1, 14))
        one = span([d["segments"][0]["steady_fps"] for d in runs.values()])
        streams = " / ".join(cell(lambda d, n=n: _streams_fps(d, n), 14) for n in (14, 21))
        rows.append([f"{codec} {size}", label, alone, one, streams])
    return rows


def _threads_rows(run, clip, codec, size):
    """FFmpeg's NVDEC with each thread count the run has (CLIP-rR-tT.json)."""
    found = glob.glob(os.path.join(run, f"{clip}-r*-t*.json"))
    threads = sorted({int(p.rsplit("-t", 1)[1][:-len(".json")]) for p in found})
    return _variant_rows(run, clip, codec, size, [(str(t), f"t{t}") for t in threads])


def _api_rows(run, clip, codec, size):
    """FFmpeg's hwaccel and its cuvid decoders (CLIP-rR-hwaccel.json, CLIP-rR-cuvid.json)."""
    return _variant_rows(run, clip, codec, size, [("hwaccel", "hwaccel"), ("cuvid", "cuvid")])


def _clip_rows(run, rows_of):
    """rows_of(run, clip, codec, size) for every clip, in order."""
    return [row for clip, codec, size in CLIPS for row in rows_of(run, clip, codec, size)]


def _variant_section(prefix, rows_of, title, how, variant, streams, every=False):
    """The newest PREFIX* folder (with `every`, each top-level one, newest first: runs of other
    clips): rows_of's rows (_variant_rows) under a paragraph of `title`, the run, its rounds and
    `how`, then the losses over every file."""
    runs = runs_of(prefix) if every else runs_of(prefix)[:1]
    out = []
    for run in runs:
        rows = _clip_rows(run, rows_of)
        if not rows:
            continue
        rounds = max(len(glob.glob(os.path.join(run, f"{clip}-r*-raw.json"))) for clip, _, _ in CLIPS)
        spread = "one round: not a range" if rounds == 1 else f"{rounds} rounds: every figure the range over them"
        out += ["", f"{title} (`{rel(run)}`, commit {run_commit(run)}, on the {card(run)}, each clip's rows and "
                f"its raw probe in one call, {spread}): {how} In brackets, "
                "÷ the same round's raw probe with as many sessions (--streams: ÷ raw 14 sessions). One file: "
                "one session through the pipeline, steady fps.", ""]
        out += table(["clip", variant, "FFmpeg's NVDEC alone, 1 / 14 sessions", "one file, one session",
                      f"--streams 14 / 21, {streams}"], rows) + ["", _threads_losses(run)]
    return out


def _threads_section():
    """The newest decode-threads-* folder (scripts/gpu-decode-where --threads): FFmpeg's
    NVDEC with 1, 2 and 4 frame threads, beside the raw probe in the same call."""
    return _variant_section(
        "decode-threads", _threads_rows, "FFmpeg's decoder threads under NVDEC",
        "`bench decode --decode-threads T --vf \"\"` (no filter) after `--raw` on the same clip. Automatic "
        "(the default) is 2 with NVDEC on a file, 1 on a live input.", "decoder threads", "decode only")


def _api_section():
    """The newest decode-api-* folder (scripts/gpu-decode-where --api): FFmpeg's hwaccel and
    its cuvid decoders (NVIDIA's parser), beside the raw probe in the same call."""
    return _variant_section(
        "decode-api", _api_rows, "FFmpeg's two ways to NVDEC",
        "`bench decode --nvdec-api A --vf resize=1280x720` after `--raw` on the same clip, A's order "
        "alternating by round; hwaccel is FFmpeg's parser on the CPU (`-hwaccel cuda`), cuvid NVIDIA's "
        "parser in the driver (`-c:v hevc_cuvid`).", "NVDEC through", "resize + download", every=True)


def _threads_losses(run):
    """Decode errors and failed streams over every file of a decode-threads run, and whether
    every session, stream and one-file run decoded each of its frames."""
    runs = [load_json(p) for p in sorted(glob.glob(os.path.join(run, "*-r*-*.json")))]
    decoders = [r for d in runs for r in d["probe"] + d["segments"]]
    streams = [r for d in runs for r in d["streams"]]
    errors = sum(r.get("errors", r.get("decode_errors", 0)) for r in decoders)
    failed = sum(r["failed"] for r in streams)
    per = {round(r["frames"] / r.get("sessions", r.get("streams", 1))) for r in decoders + streams}
    return (f"Over the run: {len(decoders)} probe and one-file runs, {errors} decode errors; "
            f"{len(streams)} --streams runs, {failed} failed; frames a session or stream: "
            f"{', '.join(f'{n:,}' for n in sorted(per))}.")


def _share(report, pick):
    """pick(stream) seconds over the stream's wall time, the mean over a report's streams."""
    shares = [pick(st) / st["wall_s"] for st in report["streams"] if st["wall_s"] > 0]
    return sum(shares) / len(shares) if shares else 0.0


def _stage_s(name):
    return lambda st: next((x["busy_s"] for x in st["stages"] if x["name"] == name), 0.0)


def _queue_blocked_s(name):
    return lambda st: next((q["producer_blocked_s"] for q in st["queues"] if q["name"] == name), 0.0)


def _queues_rows(run, clip, codec, size):
    """One clip's rows: --streams N at each --queue-depth, beside FFmpeg's NVDEC alone and the raw
    probe with N sessions from the same call."""
    probes = {k: load_json(p) for k in ("raw", "ffmpeg")
              if os.path.exists(p := os.path.join(run, f"{clip}-{k}.json"))}
    prefix = os.path.join(run, clip) + "-q"
    runs = sorted((tuple(int(x) for x in p[len(prefix):-len(".json")].split("-s")), p)
                  for p in glob.glob(prefix + "*-s*.json"))
    rows = []
    for (q, n), path in sorted(runs, key=lambda r: (r[0][1], r[0][0])):  # by streams, then depth
        rep = load_json(path)
        steady = sum(st["steady_fps"] for st in rep["streams"])
        ratio = lambda k: (f"{steady / _probe_fps(probes[k], n):.2f}"
                           if k in probes and any(r["sessions"] == n for r in probes[k]["probe"]) else "–")
        rows.append([f"{codec} {size}", str(n), str(q), f"{steady:,.0f}", ratio("ffmpeg"), ratio("raw"),
                     f"{_share(rep, _stage_s('decode')):.2f}", f"{_share(rep, _queue_blocked_s('decode→')):.2f}",
                     f"{_share(rep, _stage_s('null')):.2f}", str(rep["aggregate"]["failed"])])
    return rows


def _queues_section():
    """The newest decode-queues-* folder (scripts/gpu-decode-where --queues): the pipeline's
    --streams N, no filter, at each --queue-depth, against FFmpeg's NVDEC alone with N sessions."""
    run = newest_run("decode-queues")
    rows = _clip_rows(run, _queues_rows) if run else []
    if not rows:
        return []
    out = ["", f"Where the pipeline around decode loses (`{rel(run)}`, commit {run_commit(run)}, one call, "
           "one round: not a range): `transcode CLIP null --streams N --vf \"\" --queue-depth Q`, its "
           "report, after `bench decode` (FFmpeg's NVDEC alone) and `bench decode --raw` with N sessions "
           "on the same clip. Shares: each stream's seconds over its wall time, the mean over the streams: "
           "the decode stage busy (its waits inside FFmpeg included), the decode thread blocked on the "
           "queue after it, the null sink busy (its wait for each frame's copy included).", ""]
    return out + table(["clip", "streams", "queue depth", "steady fps (sum)", "÷ FFmpeg alone",
                        "÷ raw", "decode busy", "decode blocked on its queue", "sink busy", "failed"], rows)


def _surfaces_rows(run):
    """FFmpeg's NVDEC alone with H surfaces held (probe-hH-rR.json), then --streams 21 at each
    queue depth and surfaces held (tr-qQ-hH-rR.json, H "def": what that build asked)."""
    probe, piped = {}, {}
    for path in glob.glob(os.path.join(run, "probe-h*-r*.json")):
        held = os.path.basename(path)[len("probe-h"):].split("-r")[0]
        probe.setdefault(int(held), []).append(load_json(path)["probe"][0])
    for path in glob.glob(os.path.join(run, "tr-q*-h*-r*.json")):
        q, held = os.path.basename(path)[len("tr-q"):].split("-r")[0].split("-h")
        piped.setdefault((int(q), held), []).append(load_json(path))
    raw = load_json(os.path.join(run, "raw.json"))["probe"][0]["steady_fps"]
    rows = [["FFmpeg's NVDEC alone, 21 sessions", "–", str(h), "–", "–",
             span([r["steady_fps"] for r in rs]), span([r["steady_fps"] / raw for r in rs], 2),
             str(sum(r["errors"] for r in rs))] for h, rs in sorted(probe.items())]
    for (q, held), reps in sorted(piped.items(), key=lambda k: (k[0][1] != "def", k[0])):
        steady = [sum(st["steady_fps"] for st in rep["streams"]) for rep in reps]
        surfaces = {st["memory"]["nvdec_pool"]["decode_surfaces"] for rep in reps for st in rep["streams"]}
        rows.append(["vpipe --streams 21", str(q), "queue depth + 3" if held == "def" else held,
                     ", ".join(str(n) for n in sorted(surfaces)),
                     span([rep["aggregate"]["fps_total"] for rep in reps]), span(steady),
                     span([v / raw for v in steady], 2),
                     str(sum(rep["aggregate"]["failed"] for rep in reps)) + " failed"])
    return rows, raw


def _surfaces_section():
    """The newest decode-surfaces-* folder: whether NVDEC's decode surfaces slow many
    sessions (the first look behind copying each NVDEC frame out as it is decoded)."""
    run = newest_run("decode-surfaces")
    if not run:
        return []
    rows, raw = _surfaces_rows(run)
    rounds = len(glob.glob(os.path.join(run, "probe-h1-r*.json")))
    out = ["", f"Why the decoder asks one surface beyond its DPB (`{rel(run)}`, a build of "
           f"{run_commit(run)} whose decoders took the surfaces held from an environment variable, "
           f"one call, {rounds} rounds: ranges over them): the HEVC 1080p clip, 21 sessions or "
           f"streams, no filter; the raw probe in the same call, {raw:,.0f} steady fps. Whole fps: "
           "the process's frames over its wall time (opening included).", ""]
    return out + table(["run", "queue depth", "surfaces held beyond DPB + 2",
                        "the decoder's surfaces (report)", "whole fps",
                        "steady fps (sum)", "÷ raw", "decode errors / failed"], rows)


def _why_section():
    """The newest decode-why-* folder: the investigation behind a change to the decode path, by its
    README's title."""
    run = newest_run("decode-why")
    if not run:
        return []
    with open_data(os.path.join(run, "README.md")) as f:
        title = f.readline().lstrip("# ").strip()
    return ["", f"{title} (on the {card(run)}): `{rel(run)}` (its README says what each file shows, and "
            "which commit changed it)."]


def sessions_section():
    """The newest decode-sessions-* folder: one round of the long file and of the
    encoder-bound case (runs.jsonl; the long file's reports for frames, latency and auto's pick)."""
    run = newest_run("decode-sessions")
    if not run:
        return []
    runs = load_jsonl(os.path.join(run, "runs.jsonl"))
    commit = run_commit(run)
    out = [f"`{rel(run)}` (commit {commit}, one round each: one round is not a range):", ""]
    rows = []
    for part in ("long", "encoder-bound"):
        mine = {r["decode_sessions"]: r for r in runs if r["part"] == part}
        one = mine.get("1")
        for s, r in mine.items():
            rep_path = os.path.join(run, f"long-{s}-1.json")
            rep = load_json(rep_path) if part == "long" and os.path.exists(rep_path) else None
            picked = next((n.split("measured: ", 1)[1] for n in (rep or {}).get("notes", [])
                           if "measured: " in n), "")
            rows.append([part, s, f"{r['whole_s']:.1f} s",
                         f"{one['whole_s'] / r['whole_s']:.2f}×" if one else "–",
                         f"{rep['frames']['video_packets_written'] / r['whole_s']:,.0f}" if rep else "–",
                         f"{rep['latency_ms']['p50']:,.0f} ms" if rep else "–", picked])
    out += table(["case", "--decode-sessions", "whole-process", "speed-up over one session",
                  "whole-process fps", "p50 latency", "auto measured"], rows)
    return out + ["", "Goals: the long file ≥ 3× one session; the encoder-bound case no slower "
                  "with auto than with one session (speed-up ≥ 0.98×)."]
