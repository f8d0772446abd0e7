"""python.module: the msccl Python module in one process (no MPI, no launcher).

compile (files, stdlib, source text, parameters, diagnostics as CompileError), Plan (load, JSON
round trip, metadata), execute_local on NumPy arrays and torch CPU tensors (results checked
against NumPy/torch), and the errors bad arguments raise. Run with the module on PYTHONPATH.
"""
import os
import tempfile
import unittest

import numpy as np

import msccl

try:
    import torch
except ImportError:  # the torch cases are skipped without torch
    torch = None


class CompileTest(unittest.TestCase):
    def test_stdlib_with_defines(self):
        plan = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 4})
        self.assertEqual(plan.num_ranks, 4)
        self.assertEqual(plan.collective, "allreduce")
        self.assertEqual(plan.name, "allreduce_ring")
        plan8 = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 8, "inplace": False})
        self.assertEqual(plan8.num_ranks, 8)
        self.assertFalse(plan8.inplace)

    def test_source_text_and_file(self):
        source = """
param n = 2
program copy_first(collective = AllGather(n, 1, false)) {
    let ch = MemoryChannel(1, 0)
    ch.put(Rank(1).get_output_buffer()[0:1], Rank(0).get_input_buffer()[0:1], tb = 0)
}
"""
        from_text = msccl.compile(source=source, verify=False)
        self.assertEqual(from_text.name, "copy_first")
        self.assertEqual(from_text.num_ranks, 2)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "copy_first.msccl")
            with open(path, "w") as f:
                f.write(source)
            self.assertEqual(msccl.compile(path, verify=False), from_text)

    def test_compile_error_carries_diagnostics(self):
        with self.assertRaises(msccl.CompileError) as cm:
            msccl.compile(source="program p(collective = AllReduce(2, 1, true)) {\n  let x = \n}\n")
        message = str(cm.exception)
        self.assertIn("error", message)
        self.assertRegex(message, r":\d+:\d+")  # points at line:col
        self.assertIsInstance(cm.exception, msccl.Error)
        self.assertIsInstance(cm.exception, RuntimeError)

    def test_missing_file_and_bad_define(self):
        with self.assertRaises(msccl.FileError) as cm:
            msccl.compile("/nonexistent/x.msccl")
        self.assertIn("x.msccl", str(cm.exception))
        with self.assertRaises(msccl.CompileError) as cm:
            msccl.compile("stdlib:allreduce/ring", defines={"ranks": 0})
        self.assertIn("ranks", str(cm.exception))
        with self.assertRaises(ValueError):
            msccl.compile()


class PlanTest(unittest.TestCase):
    def test_json_round_trip_and_load(self):
        plan = msccl.compile("stdlib:allgather/ring", defines={"ranks": 4})
        again = msccl.Plan.from_json(plan.to_json())
        self.assertEqual(plan, again)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.json")
            plan.save(path)
            self.assertEqual(msccl.Plan.load(path), plan)
        self.assertIn("allgather", repr(plan))

    def test_plan_error_names_the_json_path(self):
        text = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 2}).to_json()
        broken = text.replace('"protocol": "Simple"', '"protocol": 7', 1)
        with self.assertRaises(msccl.PlanError) as cm:
            msccl.Plan.from_json(broken)
        self.assertIn("protocol", str(cm.exception))
        with self.assertRaises(OSError):
            msccl.Plan.load("/nonexistent/plan.json")


class ExecuteLocalTest(unittest.TestCase):
    ranks = 4

    def setUp(self):
        self.rng = np.random.default_rng(7)

    def test_allreduce_numpy_out_of_place_and_in_place(self):
        plan = msccl.compile("stdlib:allreduce/ring", defines={"ranks": self.ranks, "inplace": False})
        n = 1024
        sends = [self.rng.integers(-100, 100, n).astype(np.float32) for _ in range(self.ranks)]
        recvs = [np.zeros(n, np.float32) for _ in range(self.ranks)]
        msccl.execute_local(plan, sends, recvs)
        expect = np.sum(sends, axis=0)
        for r in range(self.ranks):
            np.testing.assert_array_equal(recvs[r], expect)
        # In place: the same array as send and receive buffer.
        plan_ip = msccl.compile("stdlib:allreduce/ring", defines={"ranks": self.ranks})
        bufs = [s.copy() for s in sends]
        msccl.execute_local(plan_ip, bufs, bufs)
        for r in range(self.ranks):
            np.testing.assert_array_equal(bufs[r], expect)

    def test_allgather_int32_and_dtype_from_buffers(self):
        plan = msccl.compile("stdlib:allgather/ring", defines={"ranks": self.ranks, "inplace": False})
        n = 64
        sends = [np.arange(n, dtype=np.int32) + 1000 * r for r in range(self.ranks)]
        recvs = [np.zeros(n * self.ranks, np.int32) for _ in range(self.ranks)]
        msccl.execute_local(plan, sends, recvs)
        for r in range(self.ranks):
            np.testing.assert_array_equal(recvs[r], np.concatenate(sends))

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_reducescatter_torch_tensors(self):
        plan = msccl.compile("stdlib:reducescatter/ring", defines={"ranks": self.ranks, "inplace": False})
        n = 256
        torch.manual_seed(3)
        sends = [torch.randint(-50, 50, (n * self.ranks,), dtype=torch.float32) for _ in range(self.ranks)]
        recvs = [torch.zeros(n, dtype=torch.float32) for _ in range(self.ranks)]
        msccl.execute_local(plan, sends, recvs, op=torch.distributed.ReduceOp.SUM)
        total = torch.stack(sends).sum(0)
        for r in range(self.ranks):
            self.assertTrue(torch.equal(recvs[r], total[r * n:(r + 1) * n]), f"rank {r}")

    def test_bad_arguments(self):
        plan = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 2, "inplace": False})
        a = [np.zeros(64, np.float32) for _ in range(2)]
        with self.assertRaisesRegex(ValueError, "2 ranks"):
            msccl.execute_local(plan, a[:1], a[:1])
        with self.assertRaisesRegex(TypeError, "data pointer"):
            msccl.execute_local(plan, [[0.0] * 64] * 2, a)
        with self.assertRaisesRegex(ValueError, "contiguous"):
            msccl.execute_local(plan, [np.zeros(128, np.float32)[::2]] * 2, a)
        ro = np.zeros(64, np.float32)
        ro.flags.writeable = False
        with self.assertRaisesRegex(ValueError, "read-only"):
            msccl.execute_local(plan, a, [ro, ro])
        with self.assertRaisesRegex(ValueError, "element type"):
            msccl.execute_local(plan, [np.zeros(64, np.float64)] * 2, [np.zeros(64, np.float64)] * 2)
        with self.assertRaisesRegex(ValueError, "reduction"):
            msccl.execute_local(plan, a, [np.zeros(64, np.float32) for _ in range(2)], op="prod")
        with self.assertRaisesRegex(ValueError, "unknown dtype"):
            msccl.execute_local(plan, a, [np.zeros(64, np.float32) for _ in range(2)], dtype="complex64")

    def test_execution_error_kind(self):
        plan = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 2, "inplace": False})
        # 6 bytes cannot be cut into the plan's chunks of 4-byte elements.
        sends = [np.zeros(6, np.uint8) for _ in range(2)]
        recvs = [np.zeros(6, np.uint8) for _ in range(2)]
        with self.assertRaises(msccl.ExecutionError) as cm:
            msccl.execute_local(plan, sends, recvs, dtype="float32")
        self.assertEqual(cm.exception.kind, "InvalidSize")
        self.assertTrue(str(cm.exception))


if __name__ == "__main__":
    unittest.main(verbosity=2)
