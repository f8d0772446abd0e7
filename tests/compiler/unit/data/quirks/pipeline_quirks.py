# Pipelines: dsl#fusion-F3 absorption skips inner fusion; trailing nop reports "before"; auto_sync off.
from mscclpp.language.channel import *
from mscclpp.language.rank import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.collectives import *
from mscclpp.language.loop import *

with CollectiveProgram("pipeline_quirks", TestCollective(2, 8, 8), 2, auto_sync=False):
    for r in range(2):
        a = MemoryChannel(1 - r, r)
        b = MemoryChannel(1 - r, r)
        rk = Rank(r)
        i = rk.get_input_buffer()
        o = rk.get_output_buffer()
        rk.barrier([0])
        with LoopIterationContext(1024, 4):
            a.signal(tb=0, data_sync=SyncType.none)
            b.signal(tb=0, data_sync=SyncType.none)
            rk.copy(o[0:1], i[0:1], tb=0)
            rk.barrier([0])
            a.wait(tb=1, data_sync=SyncType.none)
            b.wait(tb=1, data_sync=SyncType.none)
            rk.copy(o[1:2], i[1:2], tb=1)
        a.signal(tb=0, data_sync=SyncType.after)
        b.signal(tb=1, data_sync=SyncType.before)
        a.wait(tb=0)
        b.wait(tb=1)
        rk.copy(o[2:3], o[0:1], tb=1)
    print(JSON())
