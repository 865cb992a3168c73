#!/bin/sh
# A discovery command that scans the host's /dev for one vendor's device nodes (a node file's
# `discover: [{command: [/bin/sh, .../dev-scan.sh, accel]}]`): one device per character device
# /dev/<prefix>*, its ID the node's name, the node its one device node. The host's /dev is
# $EXTENDED_RESOURCE_HOST_ROOT/dev where the agent runs in a pod.
set -eu
prefix=${1:?usage: dev-scan.sh PREFIX (e.g. accel for /dev/accel0, /dev/accel1, ...)}
root=${EXTENDED_RESOURCE_HOST_ROOT:-}
printf '{"devices": ['
sep=
for node in "$root"/dev/"$prefix"*; do
  [ -c "$node" ] || continue
  name=${node##*/}
  printf '%s{"id": "%s", "deviceNodes": ["/dev/%s"]}' "$sep" "$name" "$name"
  sep=', '
done
printf ']}\n'
