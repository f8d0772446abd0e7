# dsl#appendix-b: replication with instances = 3 (interleaved).
from mscclpp.language.channel import *
from mscclpp.language.rank import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.collectives import *
from mscclpp.language.thread_block_group import *

with CollectiveProgram("appendix_b", AllReduce(2, 2, False), 2, instances=3):
    r0 = Rank(0)
    i = r0.get_input_buffer()
    o = r0.get_output_buffer()
    s = Buffer(0, 2)
    s1 = Buffer(1, 2)
    m = MemoryChannel(1, 0)
    m2 = MemoryChannel(1, 0)
    q = PortChannel(1, 0)
    sem = Semaphore(0, 1)
    sem2 = Semaphore(0, 0)
    sw = SwitchChannel([0, 1], BufferType.input)
    q.put(s1[0:2], i[2:4], tb=0)
    m.signal(tb=0)
    q.signal(tb=0)
    sem.release(tb=0)
    r0.barrier([0, 1])
    m2.put(Rank(1).get_input_buffer()[1:3], i[0:2], tb=1)
    sem2.acquire(tb=1)
    r0.barrier([0, 1])
    sw.at_rank(0).reduce(1, 2, i[1:3], tb=1)
    sw.at_rank(0).broadcast(i[1:3], 1, 2, tb=1)
    r0.copy(s[0:2], o[2:4], tb_group=ThreadBlockGroup([1, 2]))
    MemoryChannel(0, 1).wait(tb=0)
    PortChannel(0, 1).wait(tb=0)
    print(JSON())
