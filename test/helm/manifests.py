#!/usr/bin/env python3
"""Compares and inspects Kubernetes manifests for test/helm/check-chart.sh.

  manifests.py compare RENDERED EXPECTED...   every object of RENDERED equals the same object
                                              (apiVersion, kind, namespace, name) of the
                                              EXPECTED files, and none is missing or extra
  manifests.py variant NAME RENDERED          the checks of one non-default render (VARIANTS)
  manifests.py scheduler-config RENDERED DIR  writes DIR/config.yaml: the render's
                                              KubeSchedulerConfiguration, runnable here by
                                              kube-scheduler --write-config-to (kubeconfig
                                              DIR/kubeconfig, extender client files in DIR)

Objects are compared as parsed YAML, so only formatting, key order and comments may differ.
A difference prints each side normalized (sorted keys, multi-line strings as blocks) as a
unified diff. Needs PyYAML.
"""

import difflib
import sys

import yaml


class BlockDumper(yaml.SafeDumper):
    """Dumps multi-line strings (a ConfigMap's embedded configuration) as literal blocks, so a
    difference inside them shows as whole lines in the diff."""


def _str_representer(dumper, value):
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


BlockDumper.add_representer(str, _str_representer)


def dump(obj):
    return yaml.dump(obj, Dumper=BlockDumper, sort_keys=True, default_flow_style=False, width=100)


def key(obj):
    meta = obj.get("metadata") or {}
    return (obj.get("apiVersion", ""), obj.get("kind", ""), meta.get("namespace", ""), meta.get("name", ""))


def show(k):
    api, kind, ns, name = k
    return f"{kind} {ns + '/' if ns else ''}{name} ({api})"


def load(paths):
    """Objects by key; a key seen twice is an error (it would hide one of them)."""
    objects, errors = {}, []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            try:
                docs = list(yaml.safe_load_all(f))
            except yaml.YAMLError as e:
                errors.append(f"{path}: not YAML: {e}")
                continue
        for doc in docs:
            if doc is None:
                continue
            if not isinstance(doc, dict):
                errors.append(f"{path}: a document that is not an object: {doc!r:.80}")
                continue
            k = key(doc)
            if k in objects:
                errors.append(f"{path}: {show(k)} appears twice")
            objects[k] = doc
    return objects, errors


def compare(rendered_path, expected_paths):
    rendered, errors = load([rendered_path])
    expected, more = load(expected_paths)
    errors += more
    for k in sorted(expected.keys() - rendered.keys()):
        errors.append(f"missing from the chart's render: {show(k)}")
    for k in sorted(rendered.keys() - expected.keys()):
        errors.append(f"rendered by the chart but not in deploy/ or crds/: {show(k)}")
    for k in sorted(expected.keys() & rendered.keys()):
        if expected[k] != rendered[k]:
            diff = difflib.unified_diff(
                dump(expected[k]).splitlines(),
                dump(rendered[k]).splitlines(),
                "deploy/ and crds/",
                "helm template",
                lineterm="",
            )
            errors.append(f"{show(k)} differs:\n" + "\n".join(diff))
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        print(f"{len(errors)} difference(s) between the chart's default render and deploy/ + crds/", file=sys.stderr)
        return 1
    print(f"{len(expected)} objects: the chart's default render equals deploy/ + crds/")
    return 0


# ------------------------------------------------------------------ checks of non-default renders


class Render:
    def __init__(self, path):
        self.objects, errors = load([path])
        if errors:
            raise AssertionError("; ".join(errors))

    def get(self, kind, name):
        found = [o for (_, k, _, n), o in self.objects.items() if k == kind and n == name]
        if not found:
            raise AssertionError(f"no {kind} {name} in the render")
        return found[0]

    def has(self, kind, name):
        return any(k == kind and n == name for (_, k, _, n) in self.objects)

    def containers(self, kind, name):
        return {c["name"]: c for c in self.get(kind, name)["spec"]["template"]["spec"]["containers"]}

    def project_containers(self):
        """Every container of every workload, but kube-scheduler's."""
        for (_, kind, _, name), o in self.objects.items():
            if kind in ("Deployment", "DaemonSet"):
                for c in o["spec"]["template"]["spec"]["containers"]:
                    if c["name"] != "kube-scheduler":
                        yield f"{kind} {name} {c['name']}", c

    def scheduler_config(self):
        cm = self.get("ConfigMap", "extended-resource-scheduler-config")
        return yaml.safe_load(cm["data"]["scheduler-config.yaml"])


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


def check_tls(r):
    """scheduler.extender.tls.enabled=true: the extender in its own Deployment behind a
    Service, served over mutual TLS, and kube-scheduler calling it over https."""
    expect(set(r.containers("Deployment", "extended-resource-scheduler")) == {"kube-scheduler"},
           "kube-scheduler's pod still has an extender sidecar")
    ext = r.containers("Deployment", "extended-resource-extender")["extender"]
    args = ext["command"]
    for flag in ("--bind-address=0.0.0.0", "--tls-cert-file=/etc/extender-tls/tls.crt",
                 "--tls-private-key-file=/etc/extender-tls/tls.key",
                 "--client-ca-file=/etc/extender-tls/ca.crt",
                 "--tls-allowed-client-names=extended-resource-kube-scheduler"):
        expect(flag in args, f"extender lacks {flag}: {args}")
    expect({"name": "verbs", "containerPort": 8888} in ext["ports"], "extender does not expose its verbs port")
    expect({m["mountPath"] for m in ext["volumeMounts"]} == {"/etc/extender-tls"}, "extender's TLS secret not mounted")
    svc = r.get("Service", "extended-resource-extender")
    expect(svc["spec"]["selector"] == {"app.kubernetes.io/name": "extended-resource-extender"}, "Service selects other pods")
    cfg = r.scheduler_config()["extenders"][0]
    expect(cfg["urlPrefix"] == "https://extended-resource-extender.kube-system.svc:8888", f"urlPrefix {cfg['urlPrefix']}")
    expect(cfg.get("enableHTTPS") is True, "enableHTTPS is not true")
    tls = cfg.get("tlsConfig") or {}
    expect(tls.get("caFile") == "/etc/extender-client/ca.crt", "tlsConfig has no caFile: the extender's certificate would go unchecked")
    ks = r.containers("Deployment", "extended-resource-scheduler")["kube-scheduler"]
    expect("/etc/extender-client" in {m["mountPath"] for m in ks["volumeMounts"]}, "kube-scheduler's client certificate not mounted")
    pol = r.get("NetworkPolicy", "extended-resource-extender")["spec"]["ingress"]
    expect(pol[0]["from"] == [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "extended-resource-scheduler"}}}],
           "the extender's verbs are open to more than kube-scheduler's pods")
    ports = [p["port"] for p in r.get("NetworkPolicy", "extended-resource-scheduler")["spec"]["ingress"][0]["ports"]]
    expect(ports == [10259], f"kube-scheduler's NetworkPolicy admits {ports}")


def check_knobs(r):
    """Image, scheduler profile and placement knobs reach the objects (values set by
    check-chart.sh)."""
    for what, c in r.project_containers():
        # The digest pins the image; the tag is not used then.
        expect(c["image"] == "registry.example/ker@sha256:" + "0123456789abcdef" * 4,
               f"{what} runs {c['image']}")
        expect(c.get("imagePullPolicy") == "Always", f"{what} has no imagePullPolicy Always")
    cfg = r.scheduler_config()
    profile = cfg["profiles"][0]
    expect("percentageOfNodesToScore" not in profile, "percentageOfNodesToScore: null still renders it")
    expect(profile["plugins"] == {"score": {"enabled": [{"name": "NodeResourcesFit", "weight": 3}]}}, f"plugins {profile.get('plugins')}")
    expect(profile["pluginConfig"][0]["args"]["scoringStrategy"]["type"] == "MostAllocated", "pluginConfig not rendered")
    ext = cfg["extenders"][0]
    expect(ext["weight"] == 5 and ext["httpTimeout"] == "10s", f"extender entry {ext}")
    ks = r.containers("Deployment", "extended-resource-scheduler")["kube-scheduler"]
    expect(ks["image"] == "registry.k8s.io/kube-scheduler@sha256:" + "fedcba9876543210" * 4,
           f"kube-scheduler runs {ks['image']}")
    sidecar = r.containers("Deployment", "extended-resource-scheduler")["extender"]
    expect("--scoring=spread" in sidecar["command"], f"extender command {sidecar['command']}")
    expect("--topology-property=numa" in sidecar["command"], f"extender command {sidecar['command']}")
    ctl = r.get("Deployment", "extended-resource-controller")["spec"]["template"]["spec"]
    expect(ctl["tolerations"] == [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}], "controller tolerations")
    expect(ctl["nodeSelector"] == {"kubernetes.io/os": "linux"}, "controller nodeSelector")
    res = r.containers("Deployment", "extended-resource-controller")["controller"]["resources"]
    expect(res == {"requests": {"cpu": "200m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}}, f"controller resources {res}")
    sched = r.get("Deployment", "extended-resource-scheduler")["spec"]["template"]
    expect("checksum/config" in sched["metadata"].get("annotations", {}), "no checksum/config annotation")
    agent = r.get("DaemonSet", "extended-resource-node-agent")["spec"]["template"]["spec"]
    cm = r.get("ConfigMap", "extended-resource-node-files")
    expect(set(cm["data"]) == {"node-1.yaml"}, f"node files {sorted(cm['data'])}")
    nf = yaml.safe_load(cm["data"]["node-1.yaml"])
    expect(nf["devices"][0]["name"] == "gpu0-node-1", f"node-1's node file {nf}")
    args = agent["containers"][0]["command"]
    expect("--node-file=/etc/extended-resource/$(NODE_NAME).yaml" in args, f"agent command {args}")
    vols = {v["name"]: v for v in agent["volumes"]}
    expect(vols["node-file"] == {"name": "node-file", "configMap": {"name": "extended-resource-node-files"}}, "node-file volume")
    expect(vols["host-mount-0"]["hostPath"]["path"] == "/usr/lib/nvidia", "hostMounts volume")
    expect(vols["host-dev"]["hostPath"]["path"] == "/run/devices", "hostDevPath volume")
    expect(vols["state"]["hostPath"]["path"] == "/run/agent-state", "stateHostPath volume")
    mounts = {m["name"]: m for m in agent["containers"][0]["volumeMounts"]}
    expect(mounts["host-mount-0"]["mountPath"] == "/host/usr/lib/nvidia" and mounts["host-mount-0"]["readOnly"], "hostMounts mount")
    expect("--cdi-spec-dirs=/run/cdi" in args, f"cdiSpecDirs flag {args}")
    expect(vols["cdi-spec-0"]["hostPath"]["path"] == "/run/cdi" and "cdi-spec-1" not in vols, "cdiSpecDirs volumes")
    expect(mounts["cdi-spec-0"]["mountPath"] == "/host/run/cdi" and mounts["cdi-spec-0"]["readOnly"], "cdiSpecDirs mount")
    expect(agent["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], "agent tolerations")


def check_no_policies(r):
    """admissionPolicy.enabled=false and networkPolicy.enabled=false: neither is rendered,
    and every component stops waiting for the admission policy on /readyz."""
    for kind in ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "NetworkPolicy"):
        expect(not any(k == kind for (_, k, _, _) in r.objects), f"a {kind} is still rendered")
    for what, c in r.project_containers():
        expect("--admission-policy=" in c["command"], f"{what} still waits for the admission policy")


def scheduler_config(rendered_path, out_dir):
    """The render's kube-scheduler configuration with what only exists in the pod (its
    in-cluster client, the extender client certificate's folder) pointed into out_dir."""
    cfg = Render(rendered_path).scheduler_config()
    cfg["clientConnection"] = {"kubeconfig": f"{out_dir}/kubeconfig"}
    for ext in cfg.get("extenders", []):
        for k, v in (ext.get("tlsConfig") or {}).items():
            ext["tlsConfig"][k] = v.replace("/etc/extender-client/", f"{out_dir}/")
    with open(f"{out_dir}/config.yaml", "w", encoding="utf-8") as f:
        f.write(dump(cfg))
    return 0


def check_network_policies(r):
    """No NetworkPolicy lets in pods of any namespace by pod labels alone: a tenant sets its own
    pods' labels, not its namespace's."""
    for (_, kind, _, name), o in r.objects.items():
        if kind != "NetworkPolicy":
            continue
        for rule in o["spec"].get("ingress", []):
            for peer in rule.get("from", []):
                if "namespaceSelector" in peer:
                    expect(peer["namespaceSelector"], f"NetworkPolicy {name} admits pods of every namespace: {peer}")


def check_default(r):
    check_network_policies(r)


def check_tls_render(r):
    check_tls(r)
    check_network_policies(r)


VARIANTS = {"default": check_default, "tls": check_tls_render, "knobs": check_knobs,
            "no-policies": check_no_policies}


def main(argv):
    if len(argv) >= 3 and argv[1] == "compare":
        return compare(argv[2], argv[3:])
    if len(argv) == 4 and argv[1] == "scheduler-config":
        try:
            return scheduler_config(argv[2], argv[3])
        except (AssertionError, KeyError, IndexError, TypeError) as e:
            print(f"scheduler-config: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
    if len(argv) == 4 and argv[1] == "variant" and argv[2] in VARIANTS:
        try:
            VARIANTS[argv[2]](Render(argv[3]))
        except (AssertionError, KeyError, IndexError, TypeError) as e:
            print(f"variant {argv[2]}: {type(e).__name__}: {e}", file=sys.stderr)
            return 1
        print(f"variant {argv[2]}: ok")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
