#!/usr/bin/env python3
"""Checks tools/ker-devices (the device table `make run` ends with) without a cluster: feeds it
test/tools/er-list.json, a `kubectl get er -o json` document in the CRD's shape, and compares
its table with the one below; also an empty list, a file argument and stdin.

    python3 test/tools/ker_devices_test.py     (`make test` runs it)
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "tools", "ker-devices")
SAMPLE = os.path.join(HERE, "er-list.json")

# Sorted by name; a device's node from matchFields or a kubernetes.io/hostname expression;
# an absent status is Available with no health reported; a shared device lists its holders.
WANT = """\
NAME               NODE            PHASE       HEALTH      CLAIM             HOLDERS
fpga-shared-0      node-2,node-3   Bound       Unhealthy   ml/fpga-shared    trainer-0,trainer-1
k80-node-1-gpu0    node-1          Bound       Healthy     default/k80-erc   k80-workload-6d9f8b7c5-x2x7q
k80-node-1-gpu1    node-1          Available   Healthy     <none>            <none>
k80-node-2-gpu0    node-2          Pending     Unhealthy   <none>            <none>
licence-any-node   <none>          Available   <none>      <none>            <none>
"""


def run(args, stdin):
    return subprocess.run([sys.executable, TOOL] + args, input=stdin, stdout=subprocess.PIPE,
                          check=True, universal_newlines=True).stdout


def main():
    with open(SAMPLE) as f:
        sample = f.read()
    cases = [
        ("file argument", run([SAMPLE], ""), WANT),
        ("stdin", run([], sample), WANT),
        ("empty list", run(["-"], '{"apiVersion":"v1","kind":"List","items":[]}'),
         "NAME   NODE   PHASE   HEALTH   CLAIM   HOLDERS\n"),
    ]
    failed = 0
    for name, got, want in cases:
        if got != want:
            failed += 1
            print("FAIL %s:\n--- want\n%s--- got\n%s" % (name, want, got))
    print("ker-devices: %d of %d cases passed" % (len(cases) - failed, len(cases)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
