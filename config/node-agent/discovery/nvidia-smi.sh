#!/bin/sh
# A discovery command for NVIDIA GPUs (a node file's `discover: [{command: [...]}]`): prints one
# device per GPU nvidia-smi lists, as the node agent reads a command's output. The ID is the
# GPU's UUID; the properties are its model, memory (a quantity, so claims can ask for
# `memory Ge 40Gi`), PCI bus ID, index and NUMA node (from the host's sysfs, where it says);
# the CDI device is the UUID-named one that
# `nvidia-ctk cdi generate --device-name-strategy=uuid` writes. It runs where the agent runs:
# nvidia-smi must be on its PATH (or named by $NVIDIA_SMI).
set -eu
smi=${NVIDIA_SMI:-nvidia-smi}
"$smi" --query-gpu=uuid,name,memory.total,pci.bus_id,index --format=csv,noheader,nounits |
  awk -F', *' -v sys="${EXTENDED_RESOURCE_HOST_ROOT:-}/sys/bus/pci/devices" '
    BEGIN { printf "{\"devices\": [" }
    NF >= 5 {
      gsub(/"/, "", $2)
      # nvidia-smi says 00000000:3B:00.0; sysfs names it 0000:3b:00.0.
      numa = ""
      file = sys "/" tolower(substr($4, 5)) "/numa_node"
      if ((getline line < file) > 0 && line >= 0) numa = ", \"numaNode\": \"" line "\""
      close(file)
      printf "%s{\"id\": \"%s\", \"properties\": {\"model\": \"%s\", \"memory\": \"%sMi\", ", sep, $1, $2, $3
      printf "\"pciBusID\": \"%s\", \"index\": \"%s\"%s}, ", $4, $5, numa
      printf "\"deviceNodes\": [\"/dev/nvidia%s\", \"/dev/nvidiactl\"], ", $5
      printf "\"cdiDevice\": \"nvidia.com/gpu=%s\"}", $1
      sep = ", "
    }
    END { print "]}" }'
