"""The smart cut against re-encoding the span, on the CPU machine (scripts/smart-cut-speed,
issue #79 item 4): the newest smart-cut-* folder's speed.json, every round; the ratio is taken
within each round."""
from .common import floor_to, load_json, newest_run, rel, run_commit, span, table

WAYS = [("smart_cut", "`--encoder copy --smart-cut`: GOPs inside copied, edges re-encoded"),
        ("reencode", "re-encode of the span (libx264 veryfast, crf 23)")]
GOAL = 10  # the issue's: a 5-minute smart cut at least 10× faster than re-encoding it


def _ratios(rounds):
    out = []
    for r in sorted({x["round"] for x in rounds}):
        ways = {x["way"]: x for x in rounds if x["round"] == r}
        if ways.get("smart_cut", {}).get("seconds", 0) > 0 and "reencode" in ways:
            out.append(ways["reencode"]["seconds"] / ways["smart_cut"]["seconds"])
    return out


def section(_suite):
    run = newest_run("smart-cut")
    if not run:
        return ["No `scripts/smart-cut-speed` run in docs/results/."]
    data = load_json(f"{run}/speed.json")
    rounds, m, src, cut = data["rounds"], data["machine"], data["source"], data["cut"]
    out = [f"`scripts/smart-cut-speed` (`{rel(run)}`, commit {run_commit(run)}, {data['date']}), on the "
           f"{m['usable_cpus']}-core {m['cpu']} that builds vpipe (no GPU), the CPU path: a "
           f"{src['seconds'] // 60}-minute {src['size']} {src['fps']}-fps H.264 file (`{' '.join(src['ffmpeg'])}`) "
           f"cut from {cut['ss']} s to {cut['to']} s. Time: the whole command, start to exit; ranges over "
           f"{max(x['round'] for x in rounds)} rounds.", ""]
    rows = []
    for way, what in WAYS:
        mine = [x for x in rounds if x["way"] == way]
        rows.append([what, span([x["seconds"] for x in mine], 1, " s"),
                     span([x["frames"] / x["seconds"] for x in mine if x["seconds"] > 0], 0),
                     span([x["frames"] for x in mine]), span([x["packets_copied"] for x in mine]),
                     "yes" if all(x["same_timestamps_as_reencode"] for x in mine) else "**no**"])
    out += table(["way", "time", "frames/s", "frames out", "packets copied", "same timestamps as the re-encode"], rows)
    ratios = _ratios(rounds)
    if ratios:
        met = sum(r >= GOAL for r in ratios)
        out += ["", f"The smart cut was {span(ratios, 1)}× as fast as the re-encode (the re-encode's time ÷ "
                f"the smart cut's, each round on its own: at least {floor_to(min(ratios), 1)}×); the goal of {GOAL}× "
                f"was met in {met} of {len(ratios)} rounds. The frames a smart cut keeps are the re-encode's, "
                "on the same clock (the last column); those in the copied GOPs are the source's bytes "
                "(`SmartCut.RandomCutsKeepTrimsFramesAndCopyTheSourcesBytes` checks both against FFmpeg's "
                "`trim`)."]
    return out
