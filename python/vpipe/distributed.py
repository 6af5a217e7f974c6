"""vpipe past one machine, on Dask (issue #80): many files, or one long file in chunks, over the
GPU workers of a Dask cluster. Dask schedules, retries and moves the work; vpipe runs each task.

    from distributed import Client
    import vpipe.distributed as vd
    client = Client("tcp://scheduler:8786")
    reports = vd.transcode_many(client, ["a.mp4", "b.mp4"], "out/", vf="resize=1280x720")
    report = vd.transcode_chunked(client, "film.mkv", "film-720p.mkv", chunks=8, encoder="ffv1")

Workers declare the GPU they own: `dask-worker tcp://scheduler:8786 --resources GPU=1`; a task
asks for one, so a worker without a GPU never gets one (gpu=False runs anywhere). Every path is
the same on the driver and each worker (shared storage). Outputs are written whole: a task
writes into a hidden folder beside its output and moves the file into place when it is done,
so a worker killed mid-task leaves nothing where the output goes; its task reruns elsewhere.

From a shell: `python3 -m vpipe.distributed --help`.
"""

import argparse
import json
import os
import shutil
import sys
import time
import uuid

from . import _lib

__all__ = ["transcode_many", "transcode_chunked", "keyframes", "join", "main"]

GPU = "GPU"  # the resource a GPU task asks one of


def keyframes(path):
    """The video stream's keyframes, read from its packets (not decoded): a dict with
    time_base [num, den], start_s (the input's start: where a transcode's clock and --ss
    count from), first_pts, end_pts, keyframes [pts…] and packets."""
    answer = _lib.lib.vpipe_keyframes(os.fsencode(os.fspath(path)))
    if answer is None:
        raise _lib.error()
    return json.loads(answer)


def join(parts, starts_s, output, *, audio_from=None, audio_start_s=0.0):
    """Joins encoded parts by stream copy, part k moved to start at starts_s[k] seconds, with
    all of audio_from's audio moved back by audio_start_s (the input's start, keyframes()'s
    start_s); the output is written whole or not at all."""
    request = {"parts": [os.fspath(p) for p in parts], "starts_s": [float(s) for s in starts_s],
               "output": os.fspath(output), "audio_start_s": float(audio_start_s)}
    if audio_from is not None:
        request["audio_from"] = os.fspath(audio_from)
    answer = _lib.lib.vpipe_join(json.dumps(request).encode())
    if answer is None:
        raise _lib.error()
    return json.loads(answer)


# ---- the tasks (they run on the workers) ---------------------------------------------------

def _worker_name():
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return "local"


def _transcode_task(input, output, staging, options):
    """One vpipe transcode into `staging` (a hidden folder beside `output`), then moved into
    place: a worker killed before the move leaves its partial file in the staging folder only."""
    import vpipe
    os.makedirs(staging, exist_ok=True)
    temp = os.path.join(staging, f"{uuid.uuid4().hex}-{os.path.basename(output)}")
    started = time.monotonic()
    try:
        report = vpipe.transcode(input, temp, **options)
        os.replace(temp, output)
    except vpipe.VpipeError as e:  # named by the output the user gave, not the staging file
        raise type(e)(str(e).replace(temp, output)) from None
    finally:
        if os.path.exists(temp):
            os.remove(temp)
    return {"input": input, "output": output, "worker": _worker_name(),
            "seconds": time.monotonic() - started, "report": report}


def _join_task(parts, starts_s, output, staging, audio_from, audio_start_s):
    temp = os.path.join(staging, f"{uuid.uuid4().hex}-{os.path.basename(output)}")
    try:
        done = join(parts, starts_s, temp, audio_from=audio_from, audio_start_s=audio_start_s)
        os.replace(temp, output)
    finally:
        if os.path.exists(temp):
            os.remove(temp)
    return dict(done, worker=_worker_name())


# ---- the driver ------------------------------------------------------------------------------

def _check_workers(client, gpu):
    workers = client.scheduler_info().get("workers", {})
    if not workers:
        raise RuntimeError(f"the Dask scheduler at {client.scheduler.address} has no worker")
    if gpu and not any(w.get("resources", {}).get(GPU, 0) >= 1 for w in workers.values()):
        raise RuntimeError(
            f"no worker of {client.scheduler.address} declares a GPU: start them with "
            f"`dask-worker {client.scheduler.address} --resources {GPU}=1`, or pass gpu=False")


def _staging_folder(folder):
    return os.path.join(folder or ".", f".vpipe-distributed-{uuid.uuid4().hex[:12]}")


def _wait(futures, what, progress):
    """Each future's result or its exception, in order, with a line per task done on stderr."""
    from distributed import as_completed
    results, failed = {}, 0
    for n, future in enumerate(as_completed(futures), 1):
        try:
            results[future.key] = future.result()
        except Exception as e:  # the task failed on every try: its reason is its result
            results[future.key] = e
            failed += 1
        if progress:
            print(f"vpipe.distributed: {what}: {n}/{len(futures)} done, {failed} failed",
                  file=sys.stderr, flush=True)
    return [results[f.key] for f in futures]


def transcode_many(client, inputs, out_dir, *, retries=2, gpu=True, suffix=None, progress=True,
                   **options):
    """Transcodes each input to out_dir/NAME (its name, with `suffix` for its extension when
    given) as one task, any vpipe option as a keyword (vf="resize=1280x720", encoder="ffv1").
    A task that fails is tried again `retries` times (Dask places it); a lost worker's tasks
    rerun elsewhere. Returns one dict per input, in order: input, output, worker, seconds and
    vpipe's report, or input, output and error (the reason, after the last try)."""
    _check_workers(client, gpu)
    inputs = [os.path.abspath(os.fspath(i)) for i in inputs]
    out_dir = os.path.abspath(os.fspath(out_dir))
    outputs = []
    for i in inputs:
        stem, ext = os.path.splitext(os.path.basename(i))
        outputs.append(os.path.join(out_dir, stem + (suffix if suffix is not None else ext)))
    _refuse_clashes(inputs, outputs)
    made = not os.path.isdir(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    staging = _staging_folder(out_dir)
    resources = {GPU: 1} if gpu else None
    futures = [client.submit(_transcode_task, i, o, staging, options, key=f"vpipe-{uuid.uuid4().hex}",
                             resources=resources, retries=retries, pure=False)
               for i, o in zip(inputs, outputs)]
    try:
        done = _wait(futures, "files", progress)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if made and not os.listdir(out_dir):  # every file failed: leave no folder either
            os.rmdir(out_dir)
    return [r if not isinstance(r, Exception) else {"input": i, "output": o, "error": str(r)}
            for r, i, o in zip(done, inputs, outputs)]


def _refuse_clashes(inputs, outputs):
    """Two inputs of one name would write one output, and an output may not be an input."""
    seen = {}
    for i, o in zip(inputs, outputs):
        if o in seen:
            raise ValueError(f"{i} and {seen[o]} would both be written to {o}: give them other names "
                             "or other output folders")
        seen[o] = i
    for o in outputs:
        if o in set(inputs) or (os.path.exists(o) and any(
                os.path.exists(i) and os.path.samefile(o, i) for i in inputs)):
            raise ValueError(f"{o}: that is an input; vpipe never writes over its input")


def plan_chunks(index, chunks):
    """Chunk starts (pts) at keyframes, as even in time as the keyframes allow: up to `chunks`
    spans, each beginning on a keyframe, together covering every frame once."""
    first, end = index["first_pts"], index["end_pts"]
    keys = sorted(k for k in index["keyframes"] if first <= k < end) or [first]
    starts = [first]
    for n in range(1, chunks):
        target = first + (end - first) * n / chunks
        nearest = min(keys, key=lambda k: abs(k - target))
        if nearest > starts[-1]:
            starts.append(nearest)
    return starts


def transcode_chunked(client, input, output, *, chunks=4, retries=2, gpu=True, progress=True,
                      **options):
    """Transcodes one long input as `chunks` tasks: the driver reads its keyframes (packets, no
    decode), each task encodes one span between keyframes (vpipe's exact cut, no audio), and a
    last task joins them by stream copy with the input's audio copied once. The frames and
    timestamps are one run's of the same options. Returns the join's counts, the spans, and
    each chunk's worker and report."""
    if chunks < 1:
        raise ValueError(f"chunks={chunks}: at least 1")
    for key in ("ss", "to", "duration", "ss_frame", "to_frame", "loop", "audio"):
        if key in options:
            raise ValueError(f"{key}: a chunked transcode cuts the input itself and takes the "
                             "audio once; transcode_many or vpipe.transcode take it")
    _check_workers(client, gpu)
    input, output = os.path.abspath(os.fspath(input)), os.path.abspath(os.fspath(output))
    _refuse_clashes([input], [output])
    index = keyframes(input)
    tb = index["time_base"][0] / index["time_base"][1]
    starts = plan_chunks(index, chunks)
    bounds = starts + [index["end_pts"]]
    folder = os.path.dirname(output)
    staging = _staging_folder(folder)
    ext = os.path.splitext(output)[1]
    parts = [os.path.join(staging, f"chunk-{k:04d}{ext}") for k in range(len(starts))]
    resources = {GPU: 1} if gpu else None
    # Times on a transcode's clock: seconds after the input's start (its earliest stream's),
    # which is where --ss counts from and where one run of the whole input starts at zero.
    start = index["start_s"]
    spans, futures = [], []
    for k, part in enumerate(parts):
        ss = 0.0 if k == 0 else bounds[k] * tb - start
        to = bounds[k + 1] * tb - start
        spans.append([ss, to])
        cut = dict(options, audio="none")
        if k > 0:  # the first from the input's start, as one run of it
            cut["ss"] = f"{ss:.6f}"
        if k + 1 < len(parts):
            cut["to"] = f"{to:.6f}"
        futures.append(client.submit(_transcode_task, input, part, staging, cut,
                                     key=f"vpipe-chunk-{k}-{uuid.uuid4().hex}", resources=resources,
                                     retries=retries, pure=False))
    try:
        done = _wait(futures, "chunks", progress)
        failed = [(k, r) for k, r in enumerate(done) if isinstance(r, Exception)]
        if failed:
            k, why = failed[0]
            raise RuntimeError(f"{input}: chunk {k + 1} of {len(parts)} failed: {why}")
        joined = client.submit(_join_task, parts, [s for s, _ in spans], output, staging, input,
                               start, key=f"vpipe-join-{uuid.uuid4().hex}",
                               retries=retries, pure=False).result()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return {"output": output, "joined": joined, "spans_s": spans,
            "chunks": [{"worker": r["worker"], "seconds": r["seconds"], "report": r["report"]}
                       for r in done]}


# ---- the front end ---------------------------------------------------------------------------

def _connect(scheduler):
    from distributed import Client, LocalCluster
    if scheduler.startswith("local:"):
        n = int(scheduler.split(":", 1)[1])
        cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                               resources={GPU: 1}, dashboard_address=None)
        return Client(cluster)
    return Client(scheduler, timeout="10s")


def _options(pairs):
    options = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"vpipe.distributed: error: --option {pair}: expected KEY=VALUE")
        options[key.replace("-", "_")] = value
    return options


def _common_arguments(parser, before_command):
    """The options that go before the command or after it (a value given after wins)."""
    default = (lambda value: value) if before_command else (lambda value: argparse.SUPPRESS)
    parser.add_argument("--scheduler", default=default(None),
                        help="tcp://HOST:8786, or local:N for a cluster of N workers on this machine")
    parser.add_argument("--retries", type=int, default=default(2),
                        help="tries again after a failure (default 2)")
    parser.add_argument("--no-gpu", action="store_true", default=default(False),
                        help="tasks ask for no GPU resource (run on any worker, the CPU path)")
    parser.add_argument("--option", action="append", metavar="KEY=VALUE", default=default(None),
                        help="any vpipe transcode option by its config key, e.g. vf=resize=1280x720 "
                             "(repeatable)")
    parser.add_argument("--json", default=default(None), help="write the reports here (JSON)")


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m vpipe.distributed",
        description="vpipe transcodes over a Dask cluster: many files (many), or one long file in "
                    "chunks (chunked). Paths must be the same on every worker (shared storage).",
        epilog="Across hosts: `dask-scheduler` on one, `dask-worker tcp://HOST:8786 --resources "
               "GPU=1 --nthreads 1` on each GPU (one per GPU, CUDA_VISIBLE_DEVICES=N), then "
               "`python3 -m vpipe.distributed many in/*.mp4 --out-dir out --scheduler "
               "tcp://HOST:8786 --option vf=resize=1280x720`. --scheduler local:N starts N workers "
               "here. docs/DEPLOY.md has the Kubernetes layout.")
    _common_arguments(parser, True)
    sub = parser.add_subparsers(dest="command", required=True)
    many = sub.add_parser("many", help="one task per file")
    many.add_argument("inputs", nargs="+")
    many.add_argument("--out-dir", required=True)
    many.add_argument("--suffix", help="the outputs' extension, e.g. .mkv (default: the input's)")
    chunked = sub.add_parser("chunked", help="one long file in chunks, joined by stream copy")
    chunked.add_argument("input")
    chunked.add_argument("output")
    chunked.add_argument("--chunks", type=int, default=4)
    for command in (many, chunked):
        _common_arguments(command, False)
    args = parser.parse_args(argv)
    if not args.scheduler:
        parser.error("--scheduler is required (tcp://HOST:8786, or local:N)")
    try:
        client = _connect(args.scheduler)
    except (OSError, TimeoutError, ValueError) as e:
        print(f"vpipe.distributed: error: cannot reach the Dask scheduler at {args.scheduler}: {e}",
              file=sys.stderr)
        return 1
    common = dict(retries=args.retries, gpu=not args.no_gpu, **_options(args.option))
    try:
        if args.command == "many":
            result = transcode_many(client, args.inputs, args.out_dir, suffix=args.suffix, **common)
            failed = [r for r in result if "error" in r]
        else:
            result = transcode_chunked(client, args.input, args.output, chunks=args.chunks, **common)
            failed = []
    except ValueError as e:  # the command line or the files named: nothing ran (usage)
        print(f"vpipe.distributed: error: {e}", file=sys.stderr)
        return 2
    except (RuntimeError, _lib.VpipeError) as e:
        print(f"vpipe.distributed: error: {e}", file=sys.stderr)
        return 1
    finally:
        client.close()
    for r in failed:
        print(f"vpipe.distributed: error: {r['input']}: {r['error']}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1, default=str)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
