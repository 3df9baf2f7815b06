#!/usr/bin/env python3
"""k8s_check.py - the settings moat's Kubernetes manifests rely on
(conf/kubernetes/), checked without a cluster.

    k8s_check.py [--moat PATH] FILE...     check; exit 0, or 1 with one
                                           "FILE: KIND/NAME: ..." line
                                           per problem
    k8s_check.py --json FILE               the documents as a JSON list
    k8s_check.py --pod FILE                per-pod.yaml's parts, as JSON,
                                           for t_k8s_pod.sh

Every document: apiVersion, kind, metadata.name; a workload's selector
matches its pod labels, container names are unique, every volume mount
names a volume of the pod, every configMap volume a ConfigMap of the file
(same namespace), every ConfigMap key ending in .json or .json.in is JSON
(@POD_IP@ rendered) and a moatd config `moat check` accepts (--moat).
Every container: allowPrivilegeEscalation false, readOnlyRootFilesystem,
capabilities drop ALL, never privileged; runAsNonRoot unless it runs as
root, then only the capabilities its role needs.

per-pod (a container runs `moat pod-init`): its --exempt-uid is the uid
of the moatd container, which is a native sidecar after it; no other
container runs as that uid, or as root, or adds a capability; the ports
of pod-init are moatd's transparent and DNS listeners, every listener is
on loopback, and the apps' proxy variables name moatd's HTTP listener.

DaemonSet: moatd's admin socket is on the hostPath /run/moat; its metrics
address is not every address and matches the container port and the
scrape annotation; the reload container shares the process namespace and
moatd's uid (so that its SIGHUP may reach it).
"""
import argparse
import copy
import ipaddress
import json
import os
import subprocess
import sys
import tempfile

import yaml

KINDS = {"Namespace", "ConfigMap", "Secret", "DaemonSet", "Deployment",
         "Job", "Pod", "ServiceAccount"}
WORKLOADS = {"DaemonSet", "Deployment", "Job"}
# What a container that runs as root may add, by what it runs.
ROOT_CAPS = {"pod-init": {"NET_ADMIN", "SETUID", "SETGID", "SETPCAP"},
             "prepare": {"CHOWN"}}
SAMPLE_POD_IP = "10.244.0.7"

PROBLEMS = []


def problem(where, msg):
    PROBLEMS.append("%s: %s" % (where, msg))


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def name_of(doc):
    return "%s/%s" % (doc.get("kind", "?"),
                      (doc.get("metadata") or {}).get("name", "?"))


def pod_spec(doc):
    if doc.get("kind") == "Pod":
        return doc.get("spec") or {}
    return ((doc.get("spec") or {}).get("template") or {}).get("spec") or {}


def containers(spec):
    return [("init", c) for c in spec.get("initContainers") or []] + \
        [("app", c) for c in spec.get("containers") or []]


def cmdline(c):
    return list(c.get("command") or []) + list(c.get("args") or [])


def role(c):
    """What a container runs: pod-init, moatd, reload, prepare or app."""
    cmd = cmdline(c)
    if cmd[:2] == ["moat", "pod-init"]:
        return "pod-init"
    if cmd[:1] == ["moatd"]:
        return "moatd"
    if c.get("name") in ("reload", "prepare"):
        return c["name"]
    return "app"


def option(cmd, opt):
    if opt in cmd and cmd.index(opt) + 1 < len(cmd):
        return cmd[cmd.index(opt) + 1]
    return None


def config_maps(docs):
    return {((d.get("metadata") or {}).get("namespace"),
             d["metadata"]["name"]): d for d in docs
            if d.get("kind") == "ConfigMap" and d.get("metadata")}


def render(text):
    return text.replace("@POD_IP@", SAMPLE_POD_IP)


def moatd_config(docs, c, spec, where):
    """The moatd config (dict) that container c reads, from the file."""
    path = option(cmdline(c), "-c")
    if path is None:
        problem(where, "moatd without -c CONFIG")
        return None
    for cm in config_maps(docs).values():
        for key, text in (cm.get("data") or {}).items():
            base = os.path.basename(path)
            if key == base or key == base + ".in":
                return json.loads(render(text))
    problem(where, "no ConfigMap key holds its config %s" % path)
    return None


def check_doc(path, doc, docs):
    where = "%s: %s" % (path, name_of(doc))
    for k in ("apiVersion", "kind"):
        if not isinstance(doc.get(k), str):
            problem(where, "no %s" % k)
    if doc.get("kind") not in KINDS:
        problem(where, "kind %r is not one moat ships" % doc.get("kind"))
    if not (doc.get("metadata") or {}).get("name"):
        problem(where, "no metadata.name")
    if doc.get("kind") == "ConfigMap":
        for key, text in (doc.get("data") or {}).items():
            if key.endswith(".json") or key.endswith(".json.in"):
                try:
                    json.loads(render(text))
                except ValueError as e:
                    problem(where, "data.%s is not JSON: %s" % (key, e))
    if doc.get("kind") in WORKLOADS:
        check_workload(where, doc, docs)


def check_workload(where, doc, docs):
    spec = pod_spec(doc)
    tmpl = (doc.get("spec") or {}).get("template") or {}
    labels = (tmpl.get("metadata") or {}).get("labels") or {}
    sel = ((doc.get("spec") or {}).get("selector") or {}).get(
        "matchLabels")
    if doc["kind"] != "Job" and not sel:
        problem(where, "no spec.selector.matchLabels")
    for k, v in (sel or {}).items():
        if labels.get(k) != v:
            problem(where, "selector %s=%s does not match the pod's "
                    "labels" % (k, v))
    vols = {v.get("name"): v for v in spec.get("volumes") or []}
    ns = (doc.get("metadata") or {}).get("namespace")
    cms = config_maps(docs)
    for v in vols.values():
        cm = (v.get("configMap") or {}).get("name")
        if cm is not None and (ns, cm) not in cms:
            problem(where, "volume %s: no ConfigMap %s in namespace %s in "
                    "this file" % (v["name"], cm, ns))
    names = set()
    for kind, c in containers(spec):
        cw = "%s: container %s" % (where, c.get("name"))
        if c.get("name") in names:
            problem(cw, "a second container of this name")
        names.add(c.get("name"))
        if not c.get("image"):
            problem(cw, "no image")
        for m in c.get("volumeMounts") or []:
            if m.get("name") not in vols:
                problem(cw, "mounts %s, not a volume of the pod" %
                        m.get("name"))
        check_security(cw, c, spec)
    if any(role(c) == "pod-init" for _, c in containers(spec)):
        check_per_pod(where, spec, docs)
    if doc["kind"] == "DaemonSet":
        check_daemonset(where, doc, spec, docs)


def security(c, spec):
    """The container's securityContext over the pod's."""
    sc = dict((spec.get("securityContext") or {}))
    sc.update(c.get("securityContext") or {})
    return sc


def check_security(cw, c, spec):
    sc = security(c, spec)
    caps = sc.get("capabilities") or {}
    if sc.get("privileged"):
        problem(cw, "privileged")
    if sc.get("allowPrivilegeEscalation") is not False:
        problem(cw, "allowPrivilegeEscalation is not false")
    if sc.get("readOnlyRootFilesystem") is not True:
        problem(cw, "readOnlyRootFilesystem is not true")
    if caps.get("drop") != ["ALL"]:
        problem(cw, "capabilities.drop is not [ALL]")
    add = set(caps.get("add") or [])
    if sc.get("runAsUser") == 0:
        allowed = ROOT_CAPS.get(role(c), set())
        if add - allowed:
            problem(cw, "runs as root and adds %s (its role %s may add "
                    "%s)" % (sorted(add - allowed), role(c),
                             sorted(allowed) or "none"))
    else:
        if sc.get("runAsNonRoot") is not True:
            problem(cw, "runAsNonRoot is not true")
        if not isinstance(sc.get("runAsUser"), int):
            problem(cw, "no runAsUser")
        if add:
            problem(cw, "adds capabilities %s" % sorted(add))


def loopback(address):
    host = address.rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def listen_port(conf, proto):
    return {int(l["address"].rsplit(":", 1)[1]) for l in
            conf.get("listen") or [] if l.get("proto") == proto}


def check_per_pod(where, spec, docs):
    inits = [c for c in spec.get("initContainers") or []]
    pi = [i for i, c in enumerate(inits) if role(c) == "pod-init"]
    md = [i for i, c in enumerate(inits) if role(c) == "moatd"]
    if len(pi) != 1 or len(md) != 1:
        problem(where, "per-pod: one pod-init and one moatd init container "
                "(a native sidecar), not %d and %d" % (len(pi), len(md)))
        return
    init, moatd = inits[pi[0]], inits[md[0]]
    if md[0] < pi[0]:
        problem(where, "per-pod: moatd starts before pod-init")
    if moatd.get("restartPolicy") != "Always":
        problem(where, "per-pod: moatd is not a native sidecar "
                "(restartPolicy: Always)")
    cmd = cmdline(init)
    uid = option(cmd, "--exempt-uid")
    muid = security(moatd, spec).get("runAsUser")
    if uid is None or str(muid) != uid:
        problem(where, "per-pod: --exempt-uid %s is not moatd's runAsUser "
                "%s" % (uid, muid))
    for kind, c in containers(spec):
        if c is moatd or c is init:
            continue
        sc = security(c, spec)
        if str(sc.get("runAsUser")) == uid:
            problem(where, "per-pod: container %s runs as the exempt uid "
                    "%s" % (c.get("name"), uid))
    conf = moatd_config(docs, moatd, spec, where)
    if conf is None:
        return
    for opt, proto in (("--transparent-port", "transparent"),
                       ("--dns-port", "dns")):
        want = option(cmd, opt)
        if want is None or int(want) not in listen_port(conf, proto):
            problem(where, "per-pod: %s %s is no %s listener of moatd's "
                    "config (%s)" % (opt, want, proto,
                                     sorted(listen_port(conf, proto))))
    for l in conf.get("listen") or []:
        if not loopback(l.get("address", "")):
            problem(where, "per-pod: listener %s is not on loopback" %
                    l.get("address"))
    http = {"http://127.0.0.1:%d" % p for p in
            listen_port(conf, "http+socks5") | listen_port(conf, "http")}
    for kind, c in containers(spec):
        if role(c) != "app":
            continue
        env = {e.get("name"): e.get("value") for e in c.get("env") or []}
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                    "https_proxy"):
            if env.get(var) not in http:
                problem(where, "per-pod: container %s: %s=%s is not "
                        "moatd's HTTP listener %s" % (c.get("name"), var,
                                                      env.get(var),
                                                      sorted(http)))


def check_daemonset(where, doc, spec, docs):
    moatd = [c for _, c in containers(spec) if role(c) == "moatd"]
    if len(moatd) != 1:
        problem(where, "daemonset: one moatd container, not %d" %
                len(moatd))
        return
    moatd = moatd[0]
    conf = moatd_config(docs, moatd, spec, where)
    if conf is None:
        return
    vols = {v.get("name"): v for v in spec.get("volumes") or []}
    mounts = {m.get("mountPath"): m.get("name") for m in
              moatd.get("volumeMounts") or []}
    adm = (conf.get("admin") or {}).get("address", "")
    if not adm.startswith("unix:/run/moat/"):
        problem(where, "daemonset: the admin socket %r is not in "
                "/run/moat" % adm)
    hp = (vols.get(mounts.get("/run/moat")) or {}).get("hostPath") or {}
    if hp.get("path") != "/run/moat":
        problem(where, "daemonset: moatd's /run/moat is not the hostPath "
                "/run/moat")
    maddr = (conf.get("metrics") or {}).get("address")
    if maddr is None:
        problem(where, "daemonset: no metrics address")
    else:
        host, port = maddr.rsplit(":", 1)
        if host.strip("[]") in ("0.0.0.0", "::"):
            problem(where, "daemonset: metrics on every address")
        ports = [p.get("containerPort") for p in moatd.get("ports") or []]
        ann = ((doc["spec"]["template"].get("metadata") or {}).get(
            "annotations") or {}).get("prometheus.io/port")
        if int(port) not in ports or ann != port:
            problem(where, "daemonset: metrics port %s is not the "
                    "containerPort %s and the scrape annotation %s" %
                    (port, ports, ann))
    reload = [c for _, c in containers(spec) if role(c) == "reload"]
    if reload:
        if not spec.get("shareProcessNamespace"):
            problem(where, "daemonset: the reload container cannot signal "
                    "moatd without shareProcessNamespace")
        if security(reload[0], spec).get("runAsUser") != \
                security(moatd, spec).get("runAsUser"):
            problem(where, "daemonset: reload and moatd run as different "
                    "uids (SIGHUP needs the same one)")


def moat_check(path, docs, moat):
    """`moat check` on each moatd config of the file."""
    for cm in config_maps(docs).values():
        for key, text in (cm.get("data") or {}).items():
            if not (key.endswith(".json") or key.endswith(".json.in")):
                continue
            where = "%s: %s: data.%s" % (path, name_of(cm), key)
            conf = json.loads(render(text))
            ok, out = run_check(moat, conf)
            # A moatd built without the metrics listener (yet) does not
            # know the key: check the rest, and say so.
            if not ok and '"metrics"' in out and "metrics" in conf:
                conf2 = copy.deepcopy(conf)
                del conf2["metrics"]
                ok, out2 = run_check(moat, conf2)
                if ok:
                    print("NOTE: %s: this moat has no \"metrics\" key; "
                          "checked without it" % where)
                    continue
                out = out2
            if not ok:
                problem(where, "moat check: %s" % out.strip())


def run_check(moat, conf):
    with tempfile.NamedTemporaryFile("w", suffix=".json",
                                     delete=False) as f:
        json.dump(conf, f, indent=2)
        name = f.name
    try:
        p = subprocess.run([moat, "check", name], capture_output=True,
                           text=True, timeout=60)
        return p.returncode == 0, p.stdout + p.stderr
    finally:
        os.unlink(name)


def pod_parts(path):
    """per-pod.yaml as t_k8s_pod.sh needs it."""
    docs = load(path)
    job = [d for d in docs if d.get("kind") in WORKLOADS][0]
    spec = pod_spec(job)
    out = {"apps": []}
    for kind, c in containers(spec):
        sc = security(c, spec)
        part = {"name": c.get("name"), "command": cmdline(c),
                "uid": sc.get("runAsUser"), "gid": sc.get("runAsGroup"),
                "caps": (sc.get("capabilities") or {}).get("add") or [],
                "no_new_privs": sc.get("allowPrivilegeEscalation") is False,
                "env": {e["name"]: e.get("value", "") for e in
                        c.get("env") or []},
                "probe": ((c.get("startupProbe") or {}).get("exec") or
                          {}).get("command")}
        r = role(c)
        if r == "app":
            out["apps"].append(part)
        else:
            out[r] = part
            if r == "moatd":
                out["config"] = moatd_config(docs, c, spec, path)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moat")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--pod", action="store_true")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    if a.json:
        print(json.dumps(load(a.files[0])))
        return 0
    if a.pod:
        print(json.dumps(pod_parts(a.files[0])))
        return 0
    for path in a.files:
        try:
            docs = load(path)
        except (OSError, yaml.YAMLError) as e:
            problem(path, "cannot read: %s" % e)
            continue
        for doc in docs:
            check_doc(path, doc, docs)
        if a.moat:
            moat_check(path, docs, a.moat)
    for p in PROBLEMS:
        print("FAIL: %s" % p)
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main())
