#!/usr/bin/env bash
# The managed-cluster metrics of `nestcp manager` against the real super cluster, and
# docs/metrics.md:
#   - before any cluster exists, nestcp_control_planes has every phase, at 0;
#   - config/samples/standalone.yaml becomes Ready: nestcp_control_planes{phase="Ready"} is 1,
#     nestcp_control_planes_ready is 1, and nestcp_certificate_expiry_seconds of the cluster is
#     about a year (its leaf certificates): between 300 and 366 days;
#   - the whole /metrics output parses as Prometheus text (format 0.0.4);
#   - /healthz, /livez, /readyz and an unknown path answer as docs/metrics.md says;
#   - docs/metrics.md: every command of "A first look" is run here (doc_commands below, each
#     found verbatim in the page, and no other command in its sh blocks); its reference lists
#     exactly the families the manager exports, with their types and labels;
#   - the observability kit (config/prometheus): every metric its alerts and dashboard name
#     is in this real /metrics, a histogram's or summary's by its _bucket, _sum or _count
#     series, and every label they match on is one the metric has; fed this scrape as what
#     Prometheus would have read for two hours, no alert fires (a healthy install is quiet).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

doc="$NESTCP_SOURCE_DIR/docs/metrics.md"
ns=metrics-clusters-$$
install_crds
new_namespace "$ns"
fake_kubelet "$ns"
start_manager mgr "$ns"
hport=$(grep -o 'health_port=[0-9]*' "$work/mgr.log" | tail -n 1 | cut -d= -f2)
export METRICS=127.0.0.1:$mgr_metrics HEALTH=127.0.0.1:$hport

scrape() { curl -s --max-time 5 "http://$METRICS/metrics"; }
# value SERIES: the value of one sample (name and labels exactly as rendered); empty if absent.
value() { scrape | awk -v k="$1" '$1 == k { print $2 }'; }
is_value() { [ "$(value "$1")" = "$2" ]; }
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$HEALTH$1"; }

# --- the health endpoints (docs/metrics.md, "Health endpoints") ---
[ "$(code /healthz)" = 200 ] || fail "/healthz: $(code /healthz)"
[ "$(code /livez)" = 200 ] || fail "/livez: $(code /livez)"
[ "$(curl -s --max-time 5 "http://$HEALTH/healthz")" = ok ] || fail "/healthz does not say ok"
[ "$(code /nothing)" = 404 ] || fail "an unknown path answers $(code /nothing)"
until_true 60 eval '[ "$(code /readyz)" = 200 ]' || fail "/readyz not 200 within 60 s"
[ "$(curl -s --max-time 5 "http://$HEALTH/readyz")" = ok ] || fail "/readyz does not say ok"

# --- no cluster yet: every phase, at 0 ---
for p in Provisioning Ready Upgrading Reconfiguring Failed Deleting Unknown; do
    is_value "nestcp_control_planes{phase=\"$p\"}" 0 ||
        fail "nestcp_control_planes{phase=\"$p\"} is '$(value "nestcp_control_planes{phase=\"$p\"}")', not 0"
done
is_value nestcp_control_planes_ready 0 || fail "nestcp_control_planes_ready is not 0"

# --- a cluster ---
t0=$(now)
kubectl -n "$ns" apply -f "$NESTCP_SOURCE_DIR/config/samples/standalone.yaml" >/dev/null
wait_ready "$ns" standalone 180
echo "standalone.yaml: Ready after $(elapsed "$t0") s"
# The Ready condition and the phase are written together; the manager's cache may trail
# kubectl by a moment.
until_true 30 is_value 'nestcp_control_planes{phase="Ready"}' 1 ||
    fail "nestcp_control_planes{phase=\"Ready\"} is not 1: $(scrape | grep '^nestcp_control_planes')"
is_value nestcp_control_planes_ready 1 || fail "nestcp_control_planes_ready is not 1"
[ "$(scrape | awk '$1 ~ /^nestcp_control_planes\{/ { s += $2 } END { print s }')" = 1 ] ||
    fail "the phases do not add up to 1 control plane"
series="nestcp_certificate_expiry_seconds{namespace=\"$ns\",cluster=\"standalone\"}"
expiry=$(value "$series")
[ -n "$expiry" ] || fail "no $series: $(scrape | grep '^nestcp_certificate_expiry')"
awk -v v="$expiry" 'BEGIN { exit !(v >= 300 * 86400 && v <= 366 * 86400) }' ||
    fail "$series is $expiry s, not between 300 and 366 days"
echo "certificate expiry: $(awk -v v="$expiry" 'BEGIN { printf "%.2f", v / 86400 }') days"

# --- the whole output parses as Prometheus text ---
scrape >"$work/metrics.txt"
python3 - "$work/metrics.txt" <<'EOF' || fail "/metrics is not valid Prometheus text"
import math, re, sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}

def number(s):
    if s in ("+Inf", "-Inf", "NaN"):
        return float(s.replace("+", ""))
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", s):
        raise ValueError("not a number: %r" % s)
    return float(s)

def labels(s, pos):
    """Parses {a="x",...} from s[pos]; returns (dict, next position)."""
    out, i = {}, pos + 1
    while True:
        if s[i] == "}":
            return out, i + 1
        m = re.compile(LABEL).match(s, i)
        if not m or s[m.end():m.end() + 2] != '="':
            raise ValueError("bad label at %d" % i)
        name, i, v = m.group(0), m.end() + 2, []
        while s[i] != '"':
            if s[i] == "\\":
                if s[i + 1] not in '\\"n':
                    raise ValueError("bad escape")
                v.append({"n": "\n"}.get(s[i + 1], s[i + 1]))
                i += 2
            else:
                v.append(s[i])
                i += 1
        if name in out:
            raise ValueError("label %s twice" % name)
        out[name] = "".join(v)
        i += 1
        if s[i] == ",":
            i += 1
        elif s[i] != "}":
            raise ValueError("bad label list")

types, helps, seen, done = {}, set(), set(), set()
current = None
hist = {}
for n, line in enumerate(open(sys.argv[1]).read().split("\n"), 1):
    try:
        if line == "":
            continue
        if line.startswith("#"):
            m = re.fullmatch(r"# (HELP|TYPE) (%s) (.*)" % NAME, line)
            if not m:
                continue  # a plain comment
            kind, name, rest = m.groups()
            if kind == "HELP":
                if name in helps:
                    raise ValueError("HELP twice")
                if re.search(r"\\[^\\n]", rest):
                    raise ValueError("bad escape in HELP")
                helps.add(name)
            else:
                if name in types or rest not in TYPES:
                    raise ValueError("TYPE twice or unknown type")
                if name in done or name == current:
                    raise ValueError("TYPE after samples")
                types[name] = rest
            continue
        m = re.compile(NAME).match(line)
        if not m:
            raise ValueError("no metric name")
        name, i = m.group(0), m.end()
        lab = {}
        if i < len(line) and line[i] == "{":
            lab, i = labels(line, i)
        parts = line[i:].split(" ")
        if parts[0] != "" or len(parts) not in (2, 3):
            raise ValueError("bad value part")
        v = number(parts[1])
        if len(parts) == 3:
            int(parts[2])
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            base = name[: -len(suffix)]
            if name.endswith(suffix) and types.get(base) in ("histogram", "summary"):
                family = base
        t = types.get(family, "untyped")
        if t == "histogram" and name.endswith("_bucket") and "le" not in lab:
            raise ValueError("bucket without le")
        if t == "histogram" and name == family:
            raise ValueError("histogram sample without suffix")
        if t == "counter" and (v < 0 or math.isnan(v)):
            raise ValueError("counter below 0")
        if family != current:
            if family in done:
                raise ValueError("samples of %s not together" % family)
            if current:
                done.add(current)
            current = family
        key = (name, tuple(sorted(lab.items())))
        if key in seen:
            raise ValueError("series twice")
        seen.add(key)
        if t == "histogram":
            rest = tuple(sorted((k, x) for k, x in lab.items() if k != "le"))
            h = hist.setdefault((family, rest), {"buckets": [], "count": None})
            if name.endswith("_bucket"):
                h["buckets"].append((number(lab["le"]), v))
            elif name.endswith("_count"):
                h["count"] = v
    except (ValueError, IndexError) as e:
        sys.exit("line %d: %s: %r" % (n, e, line))
for (family, rest), h in hist.items():
    les = [b[0] for b in h["buckets"]]
    counts = [b[1] for b in h["buckets"]]
    if les != sorted(les) or not les or les[-1] != math.inf:
        sys.exit("%s%s: buckets out of order or no +Inf" % (family, rest))
    if counts != sorted(counts) or counts[-1] != h["count"]:
        sys.exit("%s%s: buckets not cumulative, or +Inf != _count" % (family, rest))
print("/metrics: %d families, %d series, %d histograms checked" % (len(types), len(seen), len(hist)))
EOF

# --- docs/metrics.md, "A first look": each command, run as the page prints it ---
doc_commands=(
    "curl -s \"\$METRICS/metrics\" | grep -E '^nestcp_control_planes'"
    "curl -s \"\$METRICS/metrics\" | awk '\$1 ~ /^nestcp_certificate_expiry_seconds/ { printf \"%s %.0f days\\n\", \$1, \$2 / 86400 }'"
    "curl -s \"\$METRICS/metrics\" | grep -E '^controller_runtime_reconcile_total'"
    "curl -s -o /dev/null -w '%{http_code}\\n' \"\$HEALTH/readyz\""
)
for c in "${doc_commands[@]}"; do
    grep -qxF -- "$c" "$doc" || fail "docs/metrics.md does not show: $c"
done
in_doc=$(awk '/^## / { first = $0 == "## A first look" } first && /^```sh$/ { on = 1; next } /^```/ { on = 0 } on' "$doc")
[ "$in_doc" = "$(printf '%s\n' "${doc_commands[@]}")" ] ||
    fail "docs/metrics.md's commands are not the ones this test runs: $in_doc"
out=$(bash -c "${doc_commands[0]}")
[ "$(printf '%s\n' "$out" | grep -c '^nestcp_control_planes{phase=')" = 7 ] ||
    fail "the phases command printed: $out"
grep -qx 'nestcp_control_planes{phase="Ready"} 1' <<<"$out" ||
    fail "the phases command printed: $out"
out=$(bash -c "${doc_commands[1]}")
printf '%s\n' "$out" | grep -Eqx "nestcp_certificate_expiry_seconds\{namespace=\"$ns\",cluster=\"standalone\"\} 36[45] days" ||
    fail "the expiry command printed: $out"
out=$(bash -c "${doc_commands[2]}")
printf '%s\n' "$out" | grep -Eq '^controller_runtime_reconcile_total\{controller="nestedcontrolplane",result="success"\} [1-9]' ||
    fail "the reconciles command printed: $out"
out=$(bash -c "${doc_commands[3]}")
[ "$out" = 200 ] || fail "the readyz command printed: $out"

# --- docs/metrics.md's reference is what the manager exports ---
python3 - "$work/metrics.txt" "$doc" <<'EOF' || fail "docs/metrics.md and /metrics disagree"
import re, sys

text, doc = open(sys.argv[1]).read(), open(sys.argv[2]).read()
exported = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
labels = {}
for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ", text, re.M):
    name = re.sub(r"_(bucket|sum|count)$", "", m.group(1)) if m.group(1) not in exported else m.group(1)
    names = set(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(2) or "")) - {"le"}
    labels.setdefault(name, set()).update(names)
rows = re.findall(r"^\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \| (counter|gauge|histogram|summary) \|([^|]*)\|",
                  doc, re.M)
documented = {r[0]: r[1] for r in rows}
bad = []
for name in sorted(set(exported) | set(documented)):
    if name not in documented:
        bad.append("exported but not documented: %s" % name)
    elif name not in exported:
        bad.append("documented but not exported: %s" % name)
    elif exported[name] != documented[name]:
        bad.append("%s: documented as %s, exported as %s" % (name, documented[name], exported[name]))
for name, _, cell in rows:
    want = set(re.findall(r"`([a-zA-Z_][a-zA-Z0-9_]*)`", cell))
    if name in labels and labels[name] != want:
        bad.append("%s: labels %s documented, %s exported" % (name, sorted(want), sorted(labels[name])))
if bad:
    sys.exit("\n".join(bad))
print("docs/metrics.md: %d families documented as exported" % len(documented))
EOF

# --- config/prometheus names only what the manager exports ---
kit=$NESTCP_SOURCE_DIR/config/prometheus
python3 "$NESTCP_SOURCE_DIR/test/support/promql.py" selectors "$kit" >"$work/selectors.tsv" ||
    fail "cannot read the queries of config/prometheus"
python3 - "$work/metrics.txt" "$work/selectors.tsv" <<'EOF' || fail "config/prometheus names what /metrics lacks"
import re, sys

# Sample names as scraped: a histogram is there as NAME_bucket, NAME_sum and NAME_count, a
# summary as NAME_sum and NAME_count, which is how a query must name them.
labels = {}
for m in re.finditer(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ", open(sys.argv[1]).read(), re.M):
    labels.setdefault(m.group(1), set()).update(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="', m.group(2) or ""))
bad, names = [], set()
for line in open(sys.argv[2]).read().splitlines():
    src, name, matchers = line.split("\t")
    names.add(name)
    if name not in labels:
        bad.append("%s: %s is not in /metrics" % (src, name))
        continue
    # job is the scrape's own label (config/prometheus/monitor.yaml).
    for label in set(re.findall(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*[=!]", matchers)) - {"job"}:
        if label not in labels[name]:
            bad.append("%s: %s has no label %s" % (src, name, label))
if bad:
    sys.exit("\n".join(bad))
print("config/prometheus: %d metric names, each in /metrics" % len(names))
EOF

# A healthy install raises no alert: this scrape, as two hours of samples of job nestcp.
python3 "$NESTCP_SOURCE_DIR/test/support/promql.py" rules "$kit" >"$work/rules.yaml"
python3 - "$work/metrics.txt" "$work/rules.yaml" >"$work/quiet_test.yaml" <<'EOF'
import math, re, sys, yaml

series = []
for line in open(sys.argv[1]).read().splitlines():
    m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$", line)
    if not m or not math.isfinite(float(m.group(3))):
        continue
    inner = (m.group(2) or "{}")[1:-1]
    sel = "%s{%s}" % (m.group(1), ",".join(x for x in (inner, 'job="nestcp"', 'pod="mgr-1"') if x))
    series.append({"series": sel, "values": "%s+0x120" % m.group(3)})
alerts = [r["alert"] for g in yaml.safe_load(open(sys.argv[2]))["groups"] for r in g["rules"]]
yaml.safe_dump({"rule_files": ["rules.yaml"], "evaluation_interval": "1m",
                "tests": [{"interval": "1m", "input_series": series,
                           "alert_rule_test": [{"eval_time": "2h", "alertname": a} for a in alerts]}]},
               sys.stdout, width=1000)
EOF
promtool test rules "$work/quiet_test.yaml" >"$work/promtool.out" 2>&1 ||
    fail "an alert fires on a healthy manager's metrics: $(cat "$work/promtool.out")"
echo "config/prometheus: no alert fires on this manager's metrics, $(grep -c '^  - series:' "$work/quiet_test.yaml") series"
