"""Parses a /metrics page as Prometheus does (prometheus_client's text parser) and prints every
sample as JSON: {"name{label=value,...}": value}, labels sorted by name. A page that does not
parse exits 1 with the parser's error."""
import json
import sys

from prometheus_client.parser import text_string_to_metric_families

page = sys.stdin.read()
samples = {}
families = {}
try:
    for family in text_string_to_metric_families(page):
        families[family.name] = {"type": family.type, "help": family.documentation}
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            samples[f"{sample.name}{{{labels}}}"] = sample.value
except Exception as error:  # the parser raises ValueError and others on a malformed page
    print(f"not Prometheus text: {error}", file=sys.stderr)
    sys.exit(1)
print(json.dumps({"samples": samples, "families": families}))
