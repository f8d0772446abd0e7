#!/usr/bin/env python3
"""Record every DSL call a Python MSCCL++ DSL program makes, as a JSON trace.

Usage: PYTHONPATH=/tmp/pydsl python3 make_traces.py OUT.json PROGRAM.py [program args...]

The trace lists the calls in order (object constructions get an id); the C++ unit test
trace_replay_test.cpp replays it through msccl/ir/Dsl.h and compares the lowered plan with the
golden plan. Only the public DSL API is wrapped; nested calls are not recorded. Test data
generator only (not part of the build).
"""
import enum, functools, inspect, json, os, runpy, sys

from mscclpp.language import channel, rank as rank_mod, program as prog_mod, loop, thread_block_group, general
from mscclpp.language.internal.types import Chunk

calls = []
ids = {}
depth = [0]


def obj_id(o):
    # Stored on the object: Python reuses id() values of freed objects.
    if "_trace_id" not in o.__dict__:
        o.__dict__["_trace_id"] = len(ids)
        ids[o.__dict__["_trace_id"]] = True
    return o.__dict__["_trace_id"]


def ser(v):
    if isinstance(v, Chunk):
        return {"chunk": [v.rank, v.buffer.value, v.index, v.size]}
    if isinstance(v, thread_block_group.ThreadBlockGroup):
        return {"tbg": obj_id(v)}
    if isinstance(v, enum.Enum):
        return {"enum": type(v).__name__ + "." + v.name}
    if isinstance(v, (list, tuple)):
        return [ser(x) for x in v]
    if isinstance(v, range):
        return [ser(x) for x in v]
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if hasattr(v, "init_buffers"):
        d = {"collective": type(v).__name__, "num_ranks": v.num_ranks, "chunk_factor": v.chunk_factor, "inplace": v.inplace}
        if hasattr(v, "input_size"):
            d["input_size"] = v.input_size
            d["output_size"] = v.output_size
        return d
    raise TypeError("cannot serialise %r" % (v,))


def wrap(cls, name, record_self):
    orig = getattr(cls, name)
    sig = inspect.signature(orig)

    @functools.wraps(orig)
    def w(self, *a, **k):
        top = depth[0] == 0
        depth[0] += 1
        try:
            if top and name != "__init__":
                b = sig.bind(self, *a, **k)
                b.apply_defaults()
                args = {n: ser(v) for n, v in list(b.arguments.items())[1:]}
                entry = {"call": cls.__name__ + "." + name, "self": obj_id(self) if record_self else None, "args": args}
                if cls is rank_mod.Rank:
                    entry["rank"] = self.rank
                calls.append(entry)
            r = orig(self, *a, **k)
            if top and name == "__init__":
                b = sig.bind(self, *a, **k)
                b.apply_defaults()
                args = {n: ser(v) for n, v in list(b.arguments.items())[1:]}
                calls.append({"call": cls.__name__, "id": obj_id(self), "args": args})
            return r
        finally:
            depth[0] -= 1

    setattr(cls, name, w)


for cls, methods in [
    (prog_mod.CollectiveProgram, ["__init__"]),
    (rank_mod.Buffer, ["__init__"]),
    (rank_mod.Semaphore, ["__init__", "acquire", "release"]),
    (rank_mod.Rank, ["copy", "copy_packets", "unpack_packets", "reduce", "barrier"]),
    (channel.MemoryChannel, ["__init__", "signal", "wait", "get", "put", "put_packets", "read_put_packets", "reduce"]),
    (channel.PortChannel, ["__init__", "signal", "wait", "flush", "put", "put_with_signal", "put_with_signal_and_flush",
                           "put_packets", "read_put_packets"]),
    (channel.SwitchChannel, ["__init__", "reduce", "broadcast", "broadcast_packets"]),
    (thread_block_group.ThreadBlockGroup, ["__init__"]),
    (loop.LoopIterationContext, ["__init__", "__enter__", "__exit__"]),
]:
    for m in methods:
        wrap(cls, m, True)

# Names imported with `from ... import *` before we patched are the classes themselves, so the
# patched methods are used. Run the program.
out = sys.argv[1]
prog = sys.argv[2]
sys.argv = [prog] + sys.argv[3:]
os.chdir(os.path.dirname(os.path.abspath(prog)))
import io, contextlib
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    runpy.run_path(prog, run_name="__main__")
with open(out, "w") as f:
    json.dump({"program": os.path.basename(prog), "calls": calls}, f, separators=(",", ":"))
    f.write("\n")
