#!/usr/bin/env bash
# `kubectl explain` on the real super cluster describes every field of every CRD nestcp ships
# (config/crd/bases), in every version the CRD serves:
#   - for each kind and version, `kubectl explain KIND` shows a description under each
#     top-level field (metadata's is the one the API server publishes for ObjectMeta), and
#     every field `kubectl explain KIND --recursive` lists (but those inside Kubernetes' own
#     ObjectMeta) has a non-empty description in the OpenAPI v3 document kubectl explain reads;
#     every gap is reported as "<crd> <version>: <field path>", all of them before failing;
#   - what kubectl explain says of the defaults a user looks up is what nestcp does.
set -euo pipefail
: "${KUBECONFIG:?KUBECONFIG must point at the super cluster}"
: "${NESTCP_SOURCE_DIR:?}"

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

src=$NESTCP_SOURCE_DIR
kubectl() { command kubectl --request-timeout=30s "$@"; }

. "$src/test/support/crds.sh"
crds_install || fail "the CRDs are not established"

crds=()
for f in "$src"/config/crd/bases/*.yaml; do
    name=$(basename "$f" .yaml)
    crds+=("${name#*_}.${name%_*}")
done
[ "${#crds[@]}" -eq 5 ] || fail "expected 5 CRDs under config/crd/bases, found ${#crds[@]}"

# explained GV RESOURCE[.FIELD]: what kubectl explain says, line breaks and kubectl's wrapping
# indentation read as one space.
explained() {
    kubectl explain "$2" --api-version="$1" 2>&1 | tr -s ' \n' '  '
}

declare -A versions kinds
for crd in "${crds[@]}"; do
    versions[$crd]=$(kubectl get crd "$crd" -o jsonpath='{range .spec.versions[?(@.served==true)]}{.name} {end}')
    [ -n "${versions[$crd]}" ] || fail "$crd serves no version"
    kinds[$crd]=$(kubectl get crd "$crd" -o jsonpath='{.spec.names.kind}')
done

# --- every field has a description ---
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fields=0
for crd in "${crds[@]}"; do
    plural=${crd%%.*} group=${crd#*.}
    spec_desc=$(kubectl get crd "$crd" -o jsonpath='{.spec.versions[0].schema.openAPIV3Schema.properties.spec.description}' |
        tr -s ' \n' '  ')
    for v in ${versions[$crd]}; do
        # kubectl explain reads the OpenAPI the API server publishes, which follows a CRD by a
        # few seconds: wait until it shows this tree's description of spec.
        end=$((SECONDS + 60))
        until kubectl explain "$plural" --api-version="$group/$v" >"$work/root" 2>&1 &&
            case "$(tr -s ' \n' '  ' <"$work/root")" in *"$spec_desc"*) true ;; *) false ;; esac; do
            [ "$SECONDS" -lt "$end" ] ||
                fail "kubectl explain $plural --api-version=$group/$v does not show the CRD's" \
                    "description of spec 60 s after it was applied: $(cat "$work/root")"
            sleep 0.5
        done
        n=$(python3 - "$plural" "$group" "$v" "${kinds[$crd]}" "$crd $v" "$work/root" \
            2>>"$work/missing" <<'EOF'
import json, re, subprocess, sys

plural, group, version, kind, label, root_file = sys.argv[1:7]

def run(*args):
    return subprocess.run(["kubectl", "--request-timeout=30s"] + list(args), check=True,
                          capture_output=True, text=True).stdout

def fields_section(text):
    return text.split("\nFIELDS:\n", 1)[1].split("\n") if "\nFIELDS:\n" in text else []

def report(path, what):
    print("%s: %s %s" % (label, path, what), file=sys.stderr)

# What kubectl explain prints for the kind itself: each top-level field and its description
# (metadata's is the one the API server publishes for ObjectMeta).
lines = fields_section(open(root_file).read())
for i, line in enumerate(lines):
    m = re.match(r"^  (\S+)\t<", line)
    if m:
        desc = []
        for d in lines[i + 1:]:
            if d.startswith("  enum:"):
                continue
            if not d.startswith("    "):
                break
            desc.append(d.strip())
        if " ".join(desc).strip() in ("", "<no description>"):
            report(m.group(1), "has no description in kubectl explain")

# Every field `kubectl explain --recursive` lists (two more spaces of indentation per level),
# but the fields of Kubernetes' own ObjectMeta.
paths, stack = [], []
for line in fields_section(run("explain", plural, "--api-version=%s/%s" % (group, version),
                               "--recursive")):
    m = re.match(r"^( +)(\S+)\t<", line)
    if not m:
        continue
    depth = len(m.group(1)) // 2 - 1
    del stack[depth:]
    stack.append(m.group(2))
    if stack[0] != "metadata" or len(stack) == 1:
        paths.append(list(stack))

# ... looked up in the OpenAPI v3 document kubectl explain reads.
doc = json.loads(run("get", "--raw", "/openapi/v3/apis/%s/%s" % (group, version)))
schemas = doc["components"]["schemas"]

def resolve(node):
    while True:
        if "$ref" in node:
            node = schemas[node["$ref"].rsplit("/", 1)[1]]
        elif "properties" not in node and len(node.get("allOf", [])) == 1:
            node = node["allOf"][0]
        else:
            return node

top = [s for s in schemas.values()
       if {"group": group, "version": version, "kind": kind}
       in s.get("x-kubernetes-group-version-kind", [])]
if len(top) != 1:
    report(kind, "is not published once in /openapi/v3/apis/%s/%s" % (group, version))
    sys.exit(1)
for path in paths:
    node = top[0]
    for seg in path:
        node = resolve(node)
        while "items" in node:
            node = resolve(node["items"])
        node = node.get("properties", {}).get(seg)
        if node is None:
            break
    if node is None:
        report(".".join(path), "is not in the published schema")
    elif not node.get("description", "").strip():
        report(".".join(path), "has no description")
print(len(paths))
EOF
        ) || fail "reading kubectl explain of $crd $v failed: $(cat "$work/missing")"
        [ "$n" -gt 3 ] || fail "kubectl explain listed only $n fields of $crd $v"
        fields=$((fields + n))
    done
done
if [ -s "$work/missing" ]; then
    cat "$work/missing" >&2
    fail "$(wc -l <"$work/missing") fields lack a description"
fi

# --- what the descriptions say ---
says() {
    case "$1" in *"$2"*) ;; *) fail "$3: kubectl explain does not say '$2': $1" ;; esac
}
for v in v1alpha4 v1beta1; do
    gv=controlplane.cluster.x-k8s.io/$v
    says "$(explained "$gv" nestedcontrolplanes.spec.controlPlaneEndpoint)" \
        "else <cluster>-apiserver.<namespace>.svc:6443" "$v spec.controlPlaneEndpoint"
    says "$(explained "$gv" nestedcontrolplanes.spec.clusterNetwork.pods)" \
        "else 10.244.0.0/16 (192.168.0.0/16 when that overlaps a service block)" \
        "$v spec.clusterNetwork.pods"
    says "$(explained "$gv" nestedcontrolplanes.spec.version)" \
        "the version the stable channel (templates/stable) lists for kube-apiserver" \
        "$v spec.version"
    for kind in nestedetcds nestedapiservers nestedcontrollermanagers; do
        out=$(explained "$gv" "$kind.spec.patches")
        for form in "type strategic (default)" "merge (patch is an RFC 7386 JSON merge patch" \
            "json (patch is an RFC 6902 JSON patch operation list)"; do
            says "$out" "$form" "$v $kind spec.patches"
        done
    done
done
echo "kubectl explain describes all $fields fields of ${#crds[@]} CRDs in every served version"
