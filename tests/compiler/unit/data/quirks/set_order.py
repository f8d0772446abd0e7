# Fused signal channel-id sets in non-ascending tb-local order (CPython set order: [9, 10, 1, 2]),
# replicated twice (replication deep-copies the sets, which rebuilds them).
from mscclpp.language.channel import *
from mscclpp.language.rank import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.collectives import *
from collections import defaultdict

n = 12
with CollectiveProgram("set_order", TestCollective(n, n, n), n, instances=2):
    chans = {}
    for src in range(n):
        for dst in range(n):
            if src != dst:
                chans[(src, dst)] = MemoryChannel(dst, src)
    received = defaultdict(int)
    for src in range(n):
        rk = Rank(src)
        i = rk.get_input_buffer()
        o = rk.get_output_buffer()
        order = sorted((d for d in range(n) if d != src), key=lambda d: (d * 7 + src) % n)
        for dst in order:
            chans[(src, dst)].signal(tb=0, data_sync=SyncType.none)
            received[(dst, src)] += 1
        for k, dst in enumerate(order):
            chans[(src, dst)].signal(tb=1, data_sync=SyncType.none)
            received[(dst, src)] += 1
            rk.copy(o[k:k + 1], i[k:k + 1], tb=1)
        for k in [10, 9, 1, 2]:
            chans[(src, order[k])].signal(tb=1)
            received[(order[k], src)] += 1
    for dst in range(n):
        for src in range(n):
            for _ in range(received[(dst, src)]):
                chans[(dst, src)].wait(tb=2, data_sync=SyncType.after)
    print(JSON())
