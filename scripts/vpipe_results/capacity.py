"""docs/CAPACITY.md's table: aggregate fps of 16 streams per input, chain and encoder, and the
streams to plan per GPU (from the archived fleet run; HISTORY says what changed since)."""
import json
import os

from .common import ARCHIVE, TARBALL, archived, archived_runs, rel, table

ROWS = [("h264-1080p-resize720-null", "H.264 1080p", "resize to 1280×720", "none (null)"),
        ("h264-1080p-resize720-blur-null", "H.264 1080p", "resize to 1280×720 + blur σ=1.5", "none (null)"),
        ("h264-1080p-resize720-mpeg4", "H.264 1080p", "resize to 1280×720", "mpeg4"),
        ("h264-1080p-resize720-libx264", "H.264 1080p", "resize to 1280×720", "libx264 veryfast"),
        ("h264-720p-resize360-libx264", "H.264 720p", "resize to 640×360", "libx264 veryfast")]
HEADROOM = 0.8  # plan a pod at 80 % of what it sustains: a burst, a restart, a neighbour


def block(_suite):
    run = [r for r in archived_runs() if r.startswith("fleet-h200-")][-1]
    files, body = archived(run), []
    for name, inp, chain, enc in ROWS:
        data = files.get(f"{run}/capacity-{name}.json")
        if data is not None:
            fps = json.loads(data)["aggregate"]["fps_total"]
            body.append([inp, chain, enc, f"{fps:.0f}", int(fps // 30), int(fps * HEADROOM // 30)])
    return [f"Run: `{rel(os.path.join(ARCHIVE, run + TARBALL))}` (`vpipe transcode … --streams 16 --loop 2 "
            "--decode nvdec`, not paced; each stream's run is a few seconds, so start-up is inside the figures: they are lower bounds; code of its commit, "
            "see [HISTORY](HISTORY.md) for what changed since).", ""] + table(
        ["input", "chain", "output encoder", "aggregate fps, 16 streams", "30 fps streams sustained",
         f"streams to plan ({HEADROOM:.0%})"], body)
