#!/usr/bin/env bash
# deploy_check_test: tests/deploy_check.py passes the committed manifests and
# fails each of these edits of a copy: an unknown key (a typo Kubernetes
# would drop), a shard count that is not the replica count, a readiness probe
# on the wrong path, a probe without its timeout, a config with a key vpipe run
# does not know.
set -uo pipefail
py=$1 vpipe=$2 src=$3
check() { "$py" "$src/tests/deploy_check.py" --vpipe "$vpipe" --dir "$1" >/dev/null 2>&1; }
check "$src/deploy/k8s" || { echo "FAIL: the committed manifests do not pass"; exit 1; }
fails=0
for edit in 's/  replicas: 3/  replicass: 3/' 's|--shard", "$(SHARD_INDEX)/3"|--shard", "$(SHARD_INDEX)/4"|' \
            's|path: /readyz|path: /ready|' '/timeoutSeconds: 5$/d' 's/mem: pool/memory: pool/'; do
  tmp=$(mktemp -d)
  cp -r "$src/deploy/k8s/." "$tmp/"
  sed -i "$edit" "$tmp"/fleet/*.yaml
  if cmp -s "$tmp/fleet/statefulset.yaml" "$src/deploy/k8s/fleet/statefulset.yaml" &&
     cmp -s "$tmp/fleet/configmap.yaml" "$src/deploy/k8s/fleet/configmap.yaml"; then
    echo "FAIL: the edit '$edit' changed nothing"; fails=1
  elif check "$tmp"; then
    echo "FAIL: deploy_check passed after '$edit'"; fails=1
  else
    echo "ok: '$edit' is caught"
  fi
  rm -rf "$tmp"
done
# The Dask layout: a worker declaring more GPUs than it is given, or naming no Service.
for edit in 's/"GPU=1"/"GPU=2"/' 's|tcp://vpipe-dask-scheduler:8786|tcp://vpipe-dask:8786|'; do
  tmp=$(mktemp -d)
  cp -r "$src/deploy/k8s/." "$tmp/"
  sed -i "$edit" "$tmp"/dask/*.yaml
  if cmp -s "$tmp/dask/cluster.yaml" "$src/deploy/k8s/dask/cluster.yaml"; then
    echo "FAIL: the edit '$edit' changed nothing"; fails=1
  elif check "$tmp"; then
    echo "FAIL: deploy_check passed after '$edit'"; fails=1
  else
    echo "ok: '$edit' is caught"
  fi
  rm -rf "$tmp"
done
exit $fails
