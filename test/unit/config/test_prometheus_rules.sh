#!/usr/bin/env bash
# The observability kit's alerts and dashboard (config/prometheus, docs/install.md
# "Monitoring"), checked with Prometheus's own tool:
#   - the PrometheusRule's spec is a valid rules file (`promtool check rules`);
#   - `promtool test rules` passes prometheus_rules_test.yaml, which has a case for every
#     alert where it fires (and where it must stay quiet), and none for an alert that does
#     not exist;
#   - every dashboard query is valid PromQL (promtool checks it as a recording rule);
#   - every series the rules and the dashboard select carries job="nestcp", the job the
#     ServiceMonitor sets, so another controller's series never count.
# test_metrics_clusters.sh checks that every metric they name is in a real manager's /metrics.
set -euo pipefail
: "${NESTCP_SOURCE_DIR:?}"

kit=$NESTCP_SOURCE_DIR/config/prometheus
promql=$NESTCP_SOURCE_DIR/test/support/promql.py
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
command -v promtool >/dev/null ||
    fail "promtool is not installed (Debian package prometheus; run hack/install-deps.sh)"
python3 -c 'import yaml' 2>/dev/null ||
    fail "python3 cannot import yaml (Debian package python3-yaml; run hack/install-deps.sh)"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# --- the rules ---
python3 "$promql" rules "$kit" >"$out/rules.yaml" || fail "config/prometheus/rules.yaml has no spec"
promtool check rules "$out/rules.yaml" || fail "promtool check rules: config/prometheus/rules.yaml"
cp "$NESTCP_SOURCE_DIR/test/unit/config/prometheus_rules_test.yaml" "$out/"
promtool test rules "$out/prometheus_rules_test.yaml" || fail "promtool test rules"

python3 - "$out/rules.yaml" "$out/prometheus_rules_test.yaml" <<'PY' || fail "an alert without a test case"
import sys, yaml
rules = yaml.safe_load(open(sys.argv[1]))
tests = yaml.safe_load(open(sys.argv[2]))["tests"]
alerts = [r["alert"] for g in rules["groups"] for r in g["rules"] if "alert" in r]
fires, named = set(), set()
for t in tests:
    for a in t.get("alert_rule_test", []):
        named.add(a["alertname"])
        if a.get("exp_alerts"):
            fires.add(a["alertname"])
bad = ["%s: no test case where it fires" % a for a in alerts if a not in fires]
bad += ["a test case for %s, which is no alert" % a for a in sorted(named - set(alerts))]
if bad:
    sys.exit("\n".join(bad))
print("%d alerts, each with a test case where it fires" % len(alerts))
PY

# --- the dashboard's queries, parsed by promtool as recording rules ---
python3 - "$kit/dashboard.json" "$promql" >"$out/dashboard-rules.yaml" <<'PY' || fail "config/prometheus/dashboard.json"
import json, runpy, sys, yaml
promql = runpy.run_path(sys.argv[2])
dash = json.load(open(sys.argv[1]))
assert dash["uid"] and dash["title"], "no uid or title"
ids = [p["id"] for p in promql["panels"](dash["panels"])]
assert len(ids) == len(set(ids)), "panel ids repeat"
rules = []
for p in promql["panels"](dash["panels"]):
    if p["type"] == "row":
        continue
    assert p.get("targets"), "panel %r has no query" % p["title"]
    for t in p["targets"]:
        # Grafana replaces $__rate_interval before Prometheus sees the query.
        rules.append({"record": "nestcp:panel_%d:%s" % (p["id"], t["refId"]),
                      "expr": t["expr"].replace("$__rate_interval", "5m")})
yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, sys.stdout)
PY
promtool check rules "$out/dashboard-rules.yaml" >/dev/null ||
    fail "a dashboard query is not valid PromQL: $(promtool check rules "$out/dashboard-rules.yaml" 2>&1)"

# --- every selector reads the kit's job ---
grep -qx '      replacement: nestcp' "$kit/monitor.yaml" || fail "monitor.yaml does not set job=nestcp"
python3 "$promql" selectors "$kit" >"$out/selectors.tsv"
[ -s "$out/selectors.tsv" ] || fail "no series selector found in the rules and dashboard"
bad=$(awk -F'\t' '$3 !~ /(^|[ ,])job="nestcp"/' "$out/selectors.tsv")
[ -z "$bad" ] || fail "selectors without job=\"nestcp\": $bad"
echo "config/prometheus: rules tested, $(grep -c . "$out/selectors.tsv") selectors in $(python3 "$promql" exprs "$kit" | grep -c .) queries, each of job nestcp"
