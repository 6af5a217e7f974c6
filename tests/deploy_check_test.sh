#!/usr/bin/env bash
# deploy_check_test: tests/deploy_check.py passes the committed manifests and
# fails each of these edits of a copy: an unknown key (a typo Kubernetes
# would drop), a shard count that is not the replica count, a readiness probe
# on the wrong path, a probe without its timeout, a config with a key vpipe run
# does not know; a Dask worker declaring more GPUs than it is given, or naming
# no Service.
set -uo pipefail
py=$1 vpipe=$2 src=$3
check() { "$py" "$src/tests/deploy_check.py" --vpipe "$vpipe" --dir "$1" >/dev/null 2>&1; }
check "$src/deploy/k8s" || { echo "FAIL: the committed manifests do not pass"; exit 1; }
fails=0
# caught FOLDER EDIT: the sed edit applied to a copy of deploy/k8s/FOLDER/*.yaml must change
# something, and deploy_check must then fail.
caught() {
  local folder=$1 edit=$2 tmp
  tmp=$(mktemp -d)
  cp -r "$src/deploy/k8s/." "$tmp/"
  sed -i "$edit" "$tmp/$folder"/*.yaml
  if diff -rq "$tmp/$folder" "$src/deploy/k8s/$folder" >/dev/null; then
    echo "FAIL: the edit '$edit' changed nothing"; fails=1
  elif check "$tmp"; then
    echo "FAIL: deploy_check passed after '$edit'"; fails=1
  else
    echo "ok: '$edit' is caught"
  fi
  rm -rf "$tmp"
}
for edit in 's/  replicas: 3/  replicass: 3/' 's|--shard", "$(SHARD_INDEX)/3"|--shard", "$(SHARD_INDEX)/4"|' \
            's|path: /readyz|path: /ready|' '/timeoutSeconds: 5$/d' 's/mem: pool/memory: pool/'; do
  caught fleet "$edit"
done
for edit in 's/"GPU=1"/"GPU=2"/' 's|tcp://vpipe-dask-scheduler:8786|tcp://vpipe-dask:8786|'; do
  caught dask "$edit"
done
exit $fails
