# shellcheck shell=bash
# Sourced by the scripts that apply crds/: waits for CRDs to be Established.
#
# wait_crds_established KUBECTL CRD...: KUBECTL is a command (a function or a path, with its
# --kubeconfig already in it) run as `KUBECTL wait ...`; returns non-zero when the CRDs are not
# Established within 60 s. `kubectl wait --for=condition=Established` alone fails at once
# instead of waiting while a new CRD's status.conditions is still null (k8s.io/kubectl's
# checkCondition takes a null for a wrong type), so it is asked again until that has passed.
wait_crds_established() {
  local crds_kubectl=$1 end=$((SECONDS + 60))
  shift
  while ((SECONDS < end)); do
    "$crds_kubectl" wait --for=condition=Established --timeout="$((end - SECONDS))s" "$@" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  "$crds_kubectl" wait --for=condition=Established --timeout=1s "$@" >/dev/null
}
