"""The PromQL of the observability kit (config/prometheus), for the tests.

    python3 promql.py exprs DIR       one line per expression: SOURCE<TAB>EXPR
    python3 promql.py selectors DIR   one line per series selector: SOURCE<TAB>NAME<TAB>MATCHERS
    python3 promql.py rules DIR       the rule groups of DIR/rules.yaml as a plain rules file

SOURCE is "alert NAME" or "panel TITLE". The selector reader knows just enough PromQL for
the kit: function and aggregation calls, by/without/on/ignoring/group_left/group_right label
lists, {matchers}, [ranges], strings, numbers and Grafana's $variables. promtool parses the
same expressions (test_prometheus_rules.sh), so anything this reader misreads is still caught
as a name the manager does not export.
"""
import json
import re
import sys

import yaml

AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
            "unless", "offset", "atan2"} | AGGREGATIONS
LABEL_LISTS = {"by", "without", "on", "ignoring", "group_left", "group_right"}


def rules(d):
    with open(d + "/rules.yaml") as f:
        pr = yaml.safe_load(f)
    if pr.get("kind") != "PrometheusRule":
        raise SystemExit(d + "/rules.yaml: not a PrometheusRule")
    return pr["spec"]


def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))


def exprs(d):
    for g in rules(d)["groups"]:
        for r in g["rules"]:
            yield "alert " + r.get("alert", r.get("record", "?")), r["expr"]
    with open(d + "/dashboard.json") as f:
        dash = json.load(f)
    for p in panels(dash["panels"]):
        for t in p.get("targets", []):
            yield "panel " + p["title"], t["expr"]


def closing(s, i, open_, close):
    """The index just past the bracket that closes s[i] (an open_), strings skipped."""
    depth = 0
    while i < len(s):
        c = s[i]
        if c in "\"'`":
            i = s.index(c, i + 1) + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced %s in %r" % (open_, s))


def selectors(expr):
    """(name, matchers) of every series selector in expr."""
    out, i, s = [], 0, expr
    ident = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
    while i < len(s):
        c = s[i]
        if c in "\"'`":
            i = s.index(c, i + 1) + 1
        elif c == "[":
            i = closing(s, i, "[", "]")
        elif c == "$":
            i = re.compile(r"\$\{?[a-zA-Z0-9_]*\}?").match(s, i).end()
        elif c.isdigit() or c == ".":
            i = re.compile(r"[0-9a-zA-Z_.+-]*").match(s, i).end() if c.isdigit() else i + 1
        elif ident.match(s, i):
            m = ident.match(s, i)
            word, i = m.group(0), m.end()
            j = len(s) - len(s[i:].lstrip())
            nxt = s[j] if j < len(s) else ""
            if word in LABEL_LISTS and nxt == "(":
                i = closing(s, j, "(", ")")
            elif word in KEYWORDS or nxt == "(":
                continue
            elif nxt == "{":
                end = closing(s, j, "{", "}")
                out.append((word, s[j + 1:end - 1]))
                i = end
            else:
                out.append((word, ""))
        elif c == "{":
            raise ValueError("a selector without a metric name in %r" % s)
        else:
            i += 1
    return out


def main():
    what, d = sys.argv[1], sys.argv[2]
    if what == "rules":
        yaml.safe_dump(rules(d), sys.stdout, sort_keys=False, width=1000)
        return
    for src, e in exprs(d):
        if what == "exprs":
            print("%s\t%s" % (src, " ".join(e.split())))
        else:
            for name, matchers in selectors(e):
                print("%s\t%s\t%s" % (src, name, matchers))


if __name__ == "__main__":
    main()
