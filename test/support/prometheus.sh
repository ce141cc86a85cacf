# A real Prometheus server (Debian's prometheus, which hack/install-deps.sh installs for its
# promtool) that scrapes one nestcp manager the way config/prometheus's ServiceMonitor tells
# the Prometheus Operator to, and loads the kit's alerts. Sourced by tests, not run.
# shellcheck shell=bash

prom_pid=""
prom_port=""

# prom_start DIR TARGET TOKEN_FILE NAMESPACE: starts Prometheus with its files in DIR
# (prometheus.yml, rules.yaml, data/, prometheus.log), scraping https://TARGET/metrics with the
# bearer token in TOKEN_FILE, the target labelled namespace=NAMESPACE as the operator labels a
# Service's endpoints. The scrape settings are read from config/prometheus/monitor.yaml; only
# the interval is shortened (1 s) so the test need not wait 30 s per sample. Sets $prom_pid
# and $prom_port; 1 if it does not answer within 30 s.
prom_start() {
    local dir=$1 target=$2 token_file=$3 namespace=$4 kit=$NESTCP_SOURCE_DIR/config/prometheus lo rest
    mkdir -p "$dir/data"
    python3 "$NESTCP_SOURCE_DIR/test/support/promql.py" rules "$kit" >"$dir/rules.yaml" || return 1
    python3 - "$kit/monitor.yaml" "$target" "$token_file" "$namespace" >"$dir/prometheus.yml" <<'PY' || return 1
import sys, yaml
monitor, target, token_file, namespace = sys.argv[1:]
(ep,) = yaml.safe_load(open(monitor))["spec"]["endpoints"]
job = {
    "job_name": "nestcp-monitor",
    "scrape_interval": "1s",
    "scheme": ep["scheme"],
    "metrics_path": ep["path"],
    "honor_labels": ep.get("honorLabels", False),
    "authorization": {"type": "Bearer", "credentials_file": token_file} if ep.get("bearerTokenFile") else None,
    "tls_config": {"insecure_skip_verify": ep["tlsConfig"].get("insecureSkipVerify", False)},
    "static_configs": [{"targets": [target], "labels": {"namespace": namespace}}],
    "relabel_configs": [{"target_label": r["targetLabel"], "replacement": r["replacement"]}
                        for r in ep.get("relabelings", [])],
}
yaml.safe_dump({"global": {"evaluation_interval": "1s"}, "rule_files": ["rules.yaml"],
                "scrape_configs": [{k: v for k, v in job.items() if v is not None}]},
               sys.stdout, sort_keys=False)
PY
    # A port below the ephemeral range that nothing holds (as hack/kube-env.sh picks them).
    read -r lo rest </proc/sys/net/ipv4/ip_local_port_range
    for _ in $(seq 1 100); do
        prom_port=$((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000)))
        [ -z "$(ss -Htan "sport = :$prom_port" 2>/dev/null)" ] && break
    done
    (cd "$dir" && exec prometheus --config.file=prometheus.yml --storage.tsdb.path=data \
        --web.listen-address="127.0.0.1:$prom_port" >prometheus.log 2>&1) &
    prom_pid=$!
    for _ in $(seq 1 60); do
        curl -sf --max-time 2 -o /dev/null "http://127.0.0.1:$prom_port/-/ready" && return 0
        kill -0 "$prom_pid" 2>/dev/null || return 1
        sleep 0.5
    done
    return 1
}

# prom_stop: stops the Prometheus prom_start started, if any.
prom_stop() {
    [ -n "$prom_pid" ] || return 0
    kill -TERM "$prom_pid" 2>/dev/null || true
    wait "$prom_pid" 2>/dev/null || true
    prom_pid=""
}

# prom_query EXPR: the JSON answer of an instant query.
prom_query() {
    curl -s --max-time 10 "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1"
}
