"""vpipe.distributed on the CPU machine (scripts/dask-scaling, issue #80): the newest
dask-scaling-* folder's scaling.json, 1, 2 and 3 Dask workers, both workloads, with vpipe's own
thread counts and with one encoder and decoder thread a task; ratios to one worker taken within
each round."""
from .common import load_json, newest_run, rel, run_commit, span, table

WORKLOADS = [("many", "12 files, one task each (transcode_many)"),
             ("chunked", "a 2-minute clip in 6 chunks, joined by stream copy (transcode_chunked)")]
THREADS = [("own", "vpipe's own thread counts"), ("one", "one encoder and one decoder thread a task")]


def _pick(rounds, **keys):
    return [x for x in rounds if all(x.get(k) == v for k, v in keys.items())]


def _ratios(rounds, workload, threads, n):
    """One worker's seconds ÷ n workers', each round on its own."""
    out = []
    for r in sorted({x["round"] for x in rounds}):
        one = _pick(rounds, round=r, workload=workload, threads=threads, workers=1)
        mine = _pick(rounds, round=r, workload=workload, threads=threads, workers=n)
        if one and mine and mine[0]["seconds"] > 0:
            out.append(one[0]["seconds"] / mine[0]["seconds"])
    return out


def _table(rounds, workload, threads):
    rows = []
    for n in sorted({x["workers"] for x in rounds}):
        mine = _pick(rounds, workload=workload, threads=threads, workers=n)
        fps = [x["frames"] / x["seconds"] for x in mine if x["seconds"] > 0]
        ratio = "1" if n == 1 else span(_ratios(rounds, workload, threads, n), 2, "×")
        rows.append([n, span([x["seconds"] for x in mine], 1, " s"), span(fps, 0), ratio,
                     sum(x["failed"] for x in mine)])
    return table(["workers", "time", "fps", "to one worker", "failed tasks"], rows)


def section(_suite):
    run = newest_run("dask-scaling")
    if not run:
        return ["No `scripts/dask-scaling` run in docs/results/."]
    data = load_json(f"{run}/scaling.json")
    rounds, m, o = data["rounds"], data["machine"], data["options"]
    out = [f"`scripts/dask-scaling` (`{rel(run)}`, commit {run_commit(run)}, {data['date']}), on the "
           f"{m['usable_cpus']}-core {m['cpu']} that builds vpipe (no GPU): a Dask scheduler and 1, 2 or 3 "
           f"worker processes of one thread each on this machine, talking TCP; {o['encoder']} {o['preset']}, "
           f"`{o['vf']}`, 640x360 in. Time: from the first task submitted to the last output in place. "
           f"Ratio: one worker's time ÷ N workers', each round on its own; ranges over "
           f"{max(x['round'] for x in rounds)} rounds.", ""]
    for workload, what in WORKLOADS:
        for threads, how in THREADS:
            if _pick(rounds, workload=workload, threads=threads):
                out += [f"**{what}, {how}**:", ""] + _table(rounds, workload, threads) + [""]
    most = max(x["workers"] for x in rounds)
    if m["usable_cpus"] < most:
        out += [f"This machine has {m['usable_cpus']} cores: with {most} workers, tasks share them. Across hosts "
                "each worker brings its own GPU and cores; that has not been measured (docs/DEPLOY.md)."]
    return out
