#!/usr/bin/env python3
"""Generate pyset_cases.json: CPython 3.11 iteration orders of fused channel-id sets.

Each case: ids (fusion order: set([ids[0]]), then s = set(s | set([x])) for each further id, as
the DSL's SignalOperation.__add__ does), `fused` = list(s), `deepcopied` = list(copy.deepcopy(s))
(what replication emits). Test data generator only.
"""
import copy, json, random, sys

random.seed(20251121)
cases = []
for t in range(400):
    pop = random.choice([8, 16, 40, 100, 300, 5000])
    n = random.randint(1, min(60, pop))
    ids = random.sample(range(pop), n)
    s = set([ids[0]])
    for x in ids[1:]:
        s = set(s | set([x]))
    cases.append({"ids": ids, "fused": list(s), "deepcopied": list(copy.deepcopy(s))})
json.dump(cases, open(sys.argv[1] if len(sys.argv) > 1 else "pyset_cases.json", "w"), separators=(",", ":"))
