#!/usr/bin/env python3
"""Rewrites the flag and feature-gate lists of one package from the real binary.

    hack/gen-package.py kube-apiserver 1.37.2
    hack/gen-package.py etcd 3.6.17

Reads `<binary> --help` (flags; etcd's gates too) and, for Kubernetes, the full gate list that
hack/recipes/tools/featuregates.go prints (--help hides GA and deprecated gates,
which a user may still set). Replaces the `flags:` and `featureGates:` blocks of
templates/packages/<component>/<major.minor>/package.yaml and leaves the rest as written.
Binaries come from hack/kube-build.sh's cache, built first if missing.
"""
import os
import re
import shutil
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)


def die(msg):
    sys.exit("gen-package: " + msg)


def bin_dir(what, version):
    out = subprocess.run([os.path.join(here, "kube-build.sh"), what, version],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    return out.strip()


def help_text(binary):
    p = subprocess.run([binary, "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    return p.stdout


def flags_of(text):
    flags = set()
    for line in text.splitlines():
        m = re.match(r"^\s+(?:-[A-Za-z], )?--([a-z0-9][a-z0-9-]*)\b", line)
        if m:
            flags.add(m.group(1))
    return sorted(flags)


def gates_from_help(text):
    gates = {}
    for line in text.splitlines():
        m = re.match(r"^\s+(?:kube:)?([A-Za-z0-9]+)=true\|false \(([A-Z]+) - default=(true|false)\)",
                     line)
        if m and m.group(1) not in ("AllAlpha", "AllBeta"):
            gates[m.group(1)] = (m.group(2), m.group(3) == "true", False)
    return gates


def kube_gates(version):
    recipe = os.path.join(here, "recipes", "kubernetes-" + version)
    cache = os.environ.get("NESTCP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "nestcp")
    env = dict(os.environ, GOMODCACHE=cache + "/gomod", GOCACHE=cache + "/gocache",
               GOFLAGS="-mod=readonly -buildvcs=false", CGO_ENABLED="0", GOTOOLCHAIN="local")
    # One source for every release: copied into the recipe for the run, so it builds against
    # that release's modules.
    tool = os.path.join(recipe, "featuregates")
    os.makedirs(tool, exist_ok=True)
    shutil.copy(os.path.join(here, "recipes", "tools", "featuregates.go"),
                os.path.join(tool, "main.go"))
    try:
        out = subprocess.run(["go", "run", "./featuregates"], cwd=recipe, env=env, check=True,
                             stdout=subprocess.PIPE, text=True).stdout
    finally:
        shutil.rmtree(tool)
    gates = {}
    for line in out.splitlines():
        name, stage, default, locked = line.split()
        if name in ("AllAlpha", "AllBeta"):
            continue
        gates[name] = (stage, default == "true", locked == "true")
    return gates


def render(flags, gates):
    out = ["flags:"] + ["- " + f for f in flags]
    if not gates:
        out.append("featureGates: {}")
        return out
    out.append("featureGates:")
    for name in sorted(gates):
        stage, default, locked = gates[name]
        item = "{stage: %s, default: %s%s}" % (stage, "true" if default else "false",
                                               ", locked: true" if locked else "")
        out.append("  %s: %s" % (name, item))
    return out


def main():
    if len(sys.argv) != 3:
        die("usage: gen-package.py kube-apiserver|kube-controller-manager|etcd VERSION")
    component, version = sys.argv[1], sys.argv[2].lstrip("v")
    line = ".".join(version.split(".")[:2])
    path = os.path.join(root, "templates", "packages", component, line, "package.yaml")
    if not os.path.exists(path):
        die("%s does not exist: write its header (component, line, image, changes) first" % path)
    if component == "etcd":
        text = help_text(os.path.join(bin_dir("etcd", version), "etcd"))
        gates = gates_from_help(text)
    elif component in ("kube-apiserver", "kube-controller-manager"):
        text = help_text(os.path.join(bin_dir("kubernetes", version), component))
        gates = kube_gates(version)
    else:
        die("unknown component %r" % component)
    flags = flags_of(text)
    if len(flags) < 20:
        die("%s --help listed only %d flags; is it the right binary?" % (component, len(flags)))
    with open(path) as f:
        lines = f.read().splitlines()
    keep = []
    skipping = False
    for l in lines:
        if re.match(r"^(flags|featureGates):", l):
            skipping = True
            continue
        if skipping and (l.startswith("- ") or l.startswith("  ") or not l.strip()):
            continue
        skipping = False
        keep.append(l)
    while keep and not keep[-1].strip():
        keep.pop()
    # The template may only pass flags this binary has; removedFlags must really be gone.
    manifest = os.path.join(os.path.dirname(path), "manifest.yaml")
    used = set(re.findall(r"^\s+- --([a-z0-9-]+)", open(manifest).read(), re.M))
    unknown = sorted(used - set(flags))
    if unknown:
        die("%s passes flags %s %s does not have" % (manifest, ", ".join(unknown), version))
    fset = set(flags)
    still = [l for l in keep if re.match(r"^- \{flag: ([a-z0-9-]+)", l) and
             re.match(r"^- \{flag: ([a-z0-9-]+)", l).group(1) in fset]
    if still:
        print("%s: %s still has these flags; dropped from removedFlags: %s" % (
            os.path.relpath(path, root), version,
            ", ".join(re.match(r"^- \{flag: ([a-z0-9-]+)", l).group(1) for l in still)))
        keep = [l for l in keep if l not in still]
    with open(path, "w") as f:
        f.write("\n".join(keep + render(flags, gates)) + "\n")
    print("%s: %d flags, %d feature gates from %s %s" % (os.path.relpath(path, root), len(flags),
                                                         len(gates), component, version))


main()
