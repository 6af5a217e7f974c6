#!/usr/bin/env python3
"""deploy_check: the Kubernetes manifests in deploy/k8s, checked offline.

Every document is read into the Kubernetes Python client's own model for its
kind (python3-kubernetes), and a key the model does not know fails (a typo
Kubernetes would silently drop). Then what vpipe needs of them: the shard
count in `vpipe run --shard X/N` equals the replicas (StatefulSet) or the
completions (Indexed Job); probes hit /healthz and /readyz on the port vpipe
serves metrics on; a GPU is requested; the live fleet drains in preStop; and
each ConfigMap's vpipe config passes `vpipe run --check`, every stream
landing on exactly one shard.

    deploy_check.py --vpipe build/bin/vpipe [--dir deploy/k8s]
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

import yaml
from kubernetes.client import ApiClient

MODELS = {("v1", "ConfigMap"): "V1ConfigMap", ("v1", "Service"): "V1Service",
          ("apps/v1", "StatefulSet"): "V1StatefulSet", ("batch/v1", "Job"): "V1Job",
          ("apps/v1", "Deployment"): "V1Deployment"}


def lost_keys(original, roundtrip, where=""):
    """Keys of `original` that the model's round trip dropped (unknown to Kubernetes)."""
    out = []
    if isinstance(original, dict):
        for k, v in original.items():
            if not isinstance(roundtrip, dict) or k not in roundtrip:
                out.append(f"{where}.{k}")
            else:
                out += lost_keys(v, roundtrip[k], f"{where}.{k}")
    elif isinstance(original, list) and isinstance(roundtrip, list):
        for i, (a, b) in enumerate(zip(original, roundtrip)):
            out += lost_keys(a, b, f"{where}[{i}]")
    return out


def as_model(doc, where):
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key not in MODELS:
        raise ValueError(f"{where}: no model for {key}")
    api = ApiClient()
    obj = api._ApiClient__deserialize(doc, MODELS[key])  # the client's own decoder, with its checks
    lost = lost_keys(doc, api.sanitize_for_serialization(obj))
    if lost:
        raise ValueError(f"{where}: keys Kubernetes does not know: {', '.join(lost)}")
    return obj


def check_workload(obj, where, errors, count):
    spec = obj.spec.template.spec
    c = spec.containers[0]
    args = " ".join(c.args or [])
    m = re.search(r"--shard \S+/(\d+)", args)
    if not m or int(m.group(1)) != count:
        errors.append(f"{where}: --shard .../N must equal {count} (args: {args})")
    if "nvidia.com/gpu" not in ((c.resources and c.resources.limits) or {}):
        errors.append(f"{where}: no nvidia.com/gpu limit")
    return c, args


def check_live(obj, where, errors):
    c, args = check_workload(obj, where, errors, obj.spec.replicas)
    port = re.search(r"--metrics-port (\d+)", args)
    names = {p.name: p.container_port for p in c.ports or []}
    if not port or names.get("metrics") != int(port.group(1)):
        errors.append(f"{where}: the port named metrics must be vpipe's --metrics-port")
    for probe, path in ((c.liveness_probe, "/healthz"), (c.readiness_probe, "/readyz")):
        if not probe or not probe.http_get or probe.http_get.path != path or probe.http_get.port != "metrics":
            errors.append(f"{where}: a probe on {path} at port metrics is missing")
        elif not probe.timeout_seconds or probe.timeout_seconds < 3:
            # Kubernetes' default is 1 s: one slow answer (a busy host) restarts the pod
            errors.append(f"{where}: the probe on {path} needs timeoutSeconds of 3 or more")
    if not (c.lifecycle and c.lifecycle.pre_stop and "TERM" in " ".join(c.lifecycle.pre_stop._exec.command)):
        errors.append(f"{where}: preStop must drain (SIGTERM, then wait)")


def check_dask(obj, where, errors, services):
    """A Dask pod: a worker names a Service and port that exist, and declares as its GPU resource
    the GPUs it is given; the scheduler's pods are what its Service selects."""
    c = obj.spec.template.spec.containers[0]
    args = c.args or []
    labels = obj.spec.template.metadata.labels or {}
    if args and args[0] == "dask-worker":
        m = re.match(r"tcp://([\w-]+):(\d+)$", args[1] if len(args) > 1 else "")
        if not m or int(m.group(2)) not in services.get(m.group(1), {}).get("ports", ()):
            errors.append(f"{where}: the worker's scheduler address names no Service port: {args[1:2]}")
        gpus = str(((c.resources and c.resources.limits) or {}).get("nvidia.com/gpu", ""))
        declared = re.search(r"--resources GPU=(\d+)", " ".join(args))
        if not gpus or not declared or declared.group(1) != gpus:
            errors.append(f"{where}: --resources GPU=N must equal the nvidia.com/gpu limit ({gpus or 'none'})")
    elif args and args[0] == "dask-scheduler":
        if not any(s["selector"] and s["selector"].items() <= labels.items() for s in services.values()):
            errors.append(f"{where}: no Service selects the scheduler's pods")


def check_config(vpipe, cm, where, errors, shards):
    for name, text in (cm.data or {}).items():
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write(text)
        try:
            everyone = [s["name"] for s in yaml.safe_load(text)["streams"]]
            seen = []
            for i in range(shards):
                r = subprocess.run([vpipe, "run", f.name, "--check", "--shard", f"{i}/{shards}"],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    errors.append(f"{where} {name}: vpipe run --check: {r.stderr.strip()}")
                    break
                seen += [line.split("\t")[0] for line in r.stdout.splitlines()]
            if sorted(seen) != sorted(everyone):
                errors.append(f"{where} {name}: shards do not cover every stream once: {sorted(seen)}")
        finally:
            os.unlink(f.name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vpipe", required=True)
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(__file__), "..", "deploy", "k8s"))
    a = ap.parse_args()
    errors, configs, counts, services, dask = [], {}, {}, {}, []
    files = sorted(glob.glob(os.path.join(a.dir, "**", "*.yaml"), recursive=True))
    for path in files:
        for i, doc in enumerate(yaml.safe_load_all(open(path))):
            where = f"{os.path.relpath(path, a.dir)}#{i}"
            try:
                obj = as_model(doc, where)
            except (ValueError, TypeError) as e:
                errors.append(str(e))
                continue
            if doc["kind"] == "Service":
                services[obj.metadata.name] = {"ports": {p.port for p in obj.spec.ports or []},
                                               "selector": obj.spec.selector or {}}
            elif doc["kind"] == "Deployment":
                dask.append((obj, where))
            elif doc["kind"] == "ConfigMap":
                configs[obj.metadata.name] = (obj, where)
            elif doc["kind"] == "StatefulSet":
                check_live(obj, where, errors)
                counts[obj.spec.template.spec.volumes[0].config_map.name] = obj.spec.replicas
            elif doc["kind"] == "Job":
                if obj.spec.completion_mode != "Indexed":
                    errors.append(f"{where}: the batch Job must be Indexed")
                check_workload(obj, where, errors, obj.spec.completions)
                counts[obj.spec.template.spec.volumes[0].config_map.name] = obj.spec.completions
    for obj, where in dask:
        check_dask(obj, where, errors, services)
    for name, (cm, where) in configs.items():
        check_config(a.vpipe, cm, where, errors, counts.get(name, 1))
    for e in errors:
        print(f"deploy_check: {e}", file=sys.stderr)
    print(f"deploy_check: {len(files)} files, {len(errors)} problem(s)")
    return 1 if errors or not files else 0


if __name__ == "__main__":
    sys.exit(main())
