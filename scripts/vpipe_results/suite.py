"""The newest suite run: docs/results/suite-DATE-COMMIT/, made by scripts/gpu-suite.

Its order among suites comes from its own files (the start time each part recorded), so a tree
without git history (a `git archive`) finds the same newest run."""
import glob
import os

from .common import RESULTS, load_json, rel


class Suite:
    def __init__(self, path):
        self.path = path
        self.name = os.path.basename(path)
        self.parts = sorted((load_json(p) for p in glob.glob(os.path.join(path, "suite-*.json"))),
                            key=lambda p: p["started"])  # the calls in the order they ran
        if not self.parts:
            raise SystemExit(f"results: {rel(path)} has no suite-*.json (what scripts/gpu-suite records)")
        # one record per lease of the machine the suite's calls ran on (machine.json, machine-2.json…)
        self.machines = [load_json(p) for p in sorted(glob.glob(os.path.join(path, "machine", "machine*.json")))]
        if not self.machines:
            raise SystemExit(f"results: {rel(path)} has no machine/machine.json")
        self.machine = self.machines[0]
        commits = {p["commit"] for p in self.parts} | {m["commit"] for m in self.machines}
        if len(commits) != 1:
            raise SystemExit(f"results: {rel(path)} mixes commits {sorted(commits)}: a suite is one commit")
        self.commit = commits.pop()
        self.started = min(p["started"] for p in self.parts)
        self.ended = max(p["ended"] for p in self.parts)
        self.date = self.started[:10]

    def file(self, section, name):
        return os.path.join(self.path, section, name)

    def has(self, section, name):
        return os.path.exists(self.file(section, name))

    def rounds_of(self, section, stem):
        """SECTION/STEM-1.json, STEM-2.json…: one file per round, in round order."""
        out, k = [], 1
        while self.has(section, f"{stem}-{k}.json"):
            out.append(load_json(self.file(section, f"{stem}-{k}.json")))
            k += 1
        return out

    def steps(self):
        return [s for p in self.parts for s in p["steps"]]

    def where(self):
        return f"`{rel(self.path)}`"


def suites():
    """Every suite run, oldest first (by when it started, from its own files)."""
    found = [Suite(p) for p in glob.glob(os.path.join(RESULTS, "suite-*")) if os.path.isdir(p)]
    return sorted(found, key=lambda s: s.started)


def newest():
    found = suites()
    if not found:
        raise SystemExit("results: no suite run under docs/results/ (scripts/gpu-suite makes one)")
    return found[-1]
