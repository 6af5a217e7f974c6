"""docs/CONTRIBUTING.md's CI times: each phase of the newest clean-clone `.ci/run` (the log's
"test: phase times" table, under docs/results/ci-times-DATE-COMMIT/)."""
import glob
import os
import re

from .common import RESULTS, open_data, rel, table


def newest():
    found = sorted(glob.glob(os.path.join(RESULTS, "ci-times-*")))
    return found[-1] if found else None


def phases(path):
    with open_data(path) as f:
        text = f.read()
    block = text[text.rindex("test: phase times"):]
    return [(m.group(1), int(m.group(2))) for m in re.finditer(r"^\s+([\w-]+)\s+(\d+) s$", block, re.M)], text


def block(_suite):
    run = newest()
    if not run:
        return ["No clean-clone CI run is recorded beside the suite."]
    log = os.path.join(run, "run.txt")
    rows, text = phases(log)
    head = text.splitlines()[0]
    body = [[name, f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"] for name, s in rows]
    return [f"{head} (`{rel(log)}`):", ""] + table(["phase", "time"], body)
