# Dependency analysis quirks: forgotten accesses, zero-size overlaps, equal-key re-registration.
from mscclpp.language.channel import *
from mscclpp.language.rank import *
from mscclpp.language.general import *
from mscclpp.language.program import *
from mscclpp.language.collectives import *

with CollectiveProgram("dependency_quirks", TestCollective(1, 8, 8), 1, instr_fusion=False):
    r = Rank(0)
    i = r.get_input_buffer()
    o = r.get_output_buffer()
    r.copy(o[1:2], i[0:1], tb=0)
    r.reduce(i[2:3], [i[3:4]], tb=0, dst_chunk=o[1:2])
    r.copy(i[2:3], o[5:6], tb=0)
    r.copy(o[1:3], i[0:2], tb=1)
    r.copy(o[2:2], i[5:5], tb=1)
    r.copy(o[2:2], i[5:5], tb=1)
    r.copy(o[3:3], o[3:3], tb=1)
    r.copy(o[3:3], i[3:3], tb=1)
    r.copy(o[2:4], i[6:8], tb=1)
    r.copy(o[0:8], i[0:8], tb=2)
    r.copy(i[3:3], o[4:4], tb=2)
    r.copy(o[4:4], i[3:3], tb=2)
    r.copy(i[4:6], o[0:1] if False else o[7:9] if False else o[6:8], tb=2)
    print(JSON())
