# glres with reduce offset != broadcast offset (dst index = src index, Python bug), packet
# reductions (recpkt packet destination is not shifted by replication), unfused glre.
from mscclpp.language.channel import *
from mscclpp.language.rank import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.collectives import *

with CollectiveProgram("glres_offsets", AllReduce(2, 4, True), 2, instances=2, protocol="LL"):
    sw = SwitchChannel([0, 1], BufferType.input)
    for r in range(2):
        i = Rank(r).get_input_buffer()
        sw.at_rank(r).reduce(r, 1, i[r:r + 1], tb=0)
        sw.at_rank(r).broadcast(i[r:r + 1], r + 2, 1, tb=0)
        sw.at_rank(r).reduce(4, 1, i[5:6], tb=1)
        scratch = Buffer(r, 4)
        peer = 1 - r
        Rank(r).reduce(i[0:1], [scratch[0:1]], tb=2, packet=True)
        Rank(r).copy_packets(scratch[2:3], i[0:1], tb=2)
    s1 = Buffer(1, 4)
    MemoryChannel(1, 0).read_put_packets(s1[0:1], Buffer(0, 4)[2:3], tb=2)
    print(JSON())
