"""python.module: the msccl Python module without a launcher (no mpirun, no torchrun).

compile (files, stdlib, source text, parameters, diagnostics as CompileError, the on-disk cache),
Plan (load, JSON round trip, metadata), PlanRegistry (register, select, explain, a Python
selector and its errors), execute_local and Executor on a local communicator (rank threads in
Python) on NumPy arrays, torch CPU tensors and raw addresses (results checked against NumPy/torch),
the unique-id bootstrap between this process and a spawned one, and the errors bad arguments
raise. Run with the module on PYTHONPATH.
"""
import multiprocessing
import os
import tempfile
import threading
import unittest

import numpy as np

import msccl

try:  # the torch cases are skipped without torch (imported where used: spawned children skip it)
    import importlib.util
    HAVE_TORCH = importlib.util.find_spec("torch") is not None
except ImportError:
    HAVE_TORCH = False


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
            path = os.path.join(d, "ring.msccl")
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


class CacheTest(unittest.TestCase):
    def test_hit_and_invalidation(self):
        with tempfile.TemporaryDirectory() as cache:
            first, second, other = {}, {}, {}
            a = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 4}, cache_dir=cache, info=first)
            b = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 4}, cache_dir=cache, info=second)
            self.assertFalse(first["cache_hit"])
            self.assertTrue(second["cache_hit"])
            self.assertEqual(first["key"], second["key"])
            self.assertTrue(os.path.isfile(second["cache_file"]))
            self.assertEqual(a, b)
            # The imports are part of the key: the stdlib's common modules were read.
            self.assertTrue(any(src.endswith("ring.msccl") for src in first["sources"]))
            c = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 2}, cache_dir=cache, info=other)
            self.assertFalse(other["cache_hit"])
            self.assertNotEqual(other["key"], first["key"])
            self.assertEqual(c.num_ranks, 2)
            uncached = {}
            msccl.compile("stdlib:allreduce/ring", defines={"ranks": 4}, cache=False, info=uncached)
            self.assertFalse(uncached["cache_hit"])
            self.assertEqual(uncached["key"], "")


class RegistryTest(unittest.TestCase):
    def setUp(self):
        self.reg = msccl.PlanRegistry()
        ring = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 4, "inplace": False})
        pairs = msccl.compile("stdlib:allreduce/allpairs", defines={"ranks": 4, "inplace": False})
        self.reg.register(ring, name="ring", min_bytes=1 << 16, tags=["bandwidth"])
        self.reg.register(pairs, name="pairs", max_bytes=(1 << 16) - 1, tags=["latency"])
        self.reg.register(pairs, name="pairs-any", tags=["latency", "fallback"])
        self.reg.register(msccl.compile("stdlib:allgather/ring", defines={"ranks": 4}), name="ag")

    def test_default_rule_and_explain(self):
        self.assertEqual(len(self.reg), 4)
        self.assertEqual([p.name for p in self.reg.plans()], ["ring", "pairs", "pairs-any", "ag"])
        self.assertEqual(self.reg.select("allreduce", 1024, world_size=4).name, "pairs")  # narrowest range
        self.assertEqual(self.reg.select("allreduce", 1 << 20, world_size=4).name, "ring")
        self.assertEqual(self.reg.select("allreduce", 1024, world_size=4, preferred_tags=["fallback"]).name,
                         "pairs-any")
        self.assertIsNone(self.reg.select("allreduce", 1024, world_size=8))
        with self.assertRaises(msccl.NoPlanError) as cm:
            self.reg.select_or_raise("allreduce", 1024, world_size=8)
        self.assertIn("8 ranks", str(cm.exception))
        self.assertEqual(self.reg.select_or_raise("allreduce", 1024, world_size=4).name, "pairs")
        self.assertIsNone(self.reg.select("allreduce", 1024, world_size=4, in_place=True))
        self.assertEqual(self.reg.select("allgather", 4096, world_size=4, in_place=True).name, "ag")
        request = msccl.SelectRequest("allreduce", 1024, world_size=4)
        why = {e["name"]: e for e in self.reg.explain(request)}
        self.assertTrue(why["pairs"]["chosen"])
        self.assertFalse(why["ring"]["eligible"])
        self.assertIn("range", why["ring"]["reason"])
        self.assertIn("allgather", why["ag"]["reason"])
        text = self.reg.explain_text(request)
        self.assertIn("ring", text)
        self.assertIn("chosen", text)

    def test_python_selector(self):
        seen = []

        def widest(request, candidates):
            seen.append((request.message_bytes, [c.name for c in candidates]))
            return max(candidates, key=lambda c: c.max_bytes - c.min_bytes) if candidates else None

        self.reg.set_selector(widest)
        self.assertEqual(self.reg.select("allreduce", 1024, world_size=4).name, "pairs-any")
        self.assertEqual(seen, [(1024, ["pairs", "pairs-any"])])
        self.reg.set_selector(lambda request, candidates: None)
        self.assertIsNone(self.reg.select("allreduce", 1024, world_size=4))
        self.reg.set_selector(lambda request, candidates: self.reg.plans()[0])  # "ring": not a candidate
        with self.assertRaisesRegex(ValueError, "not one of its candidates"):
            self.reg.select("allreduce", 1024, world_size=4)

        def broken(request, candidates):
            raise KeyError("selector bug")

        self.reg.set_selector(broken)
        with self.assertRaisesRegex(KeyError, "selector bug"):
            self.reg.select("allreduce", 1024, world_size=4)
        self.reg.set_selector(None)  # back to the default rule
        self.assertEqual(self.reg.select("allreduce", 1024, world_size=4).name, "pairs")
        with self.assertRaises(TypeError):
            self.reg.set_selector(42)

    def test_register_errors_and_files(self):
        ring = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 4})
        with self.assertRaises(msccl.ArgumentError) as cm:
            self.reg.register(ring, name="ring")
        self.assertIsInstance(cm.exception, ValueError)
        with self.assertRaises(msccl.ArgumentError):
            self.reg.register(ring, name="bad-range", min_bytes=10, max_bytes=5)
        with tempfile.TemporaryDirectory() as d:
            ring.save(os.path.join(d, "a.json"))
            with open(os.path.join(d, "b.msccl"), "w") as f:
                f.write('import "allreduce/ring.msccl"\n')
            reg = msccl.PlanRegistry()
            reg.register(os.path.join(d, "a.json"), name="from-file", tags=["x"])
            self.assertEqual(reg.plans()[0].plan, ring)
            self.assertEqual(reg.plans()[0].tags, ["x"])
            self.assertTrue(reg.remove("from-file"))
            self.assertFalse(reg.remove("from-file"))
            # A .msccl program compiled with its parameters; a directory of them (the stdlib's ring,
            # whose imports resolve in the stdlib).
            stdlib = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "stdlib")
            with open(os.path.join(stdlib, "allreduce", "ring.msccl")) as f:
                source = f.read()
            sub = os.path.join(d, "programs")
            os.mkdir(sub)
            with open(os.path.join(sub, "ring.msccl"), "w") as f:
                f.write(source)
            p = reg.register(os.path.join(sub, "ring.msccl"), name="ring3", defines={"ranks": 3})
            self.assertEqual((p.world_size, p.collective), (3, "allreduce"))
            with self.assertRaises(ValueError):
                reg.register(ring, name="r", defines={"ranks": 4})
            dir_reg = msccl.PlanRegistry()
            self.assertEqual(dir_reg.register_directory(sub, defines={"ranks": 4}), 1)
            self.assertEqual(dir_reg.plans()[0].world_size, 4)


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

    @unittest.skipIf(not HAVE_TORCH, "torch is not installed")
    def test_reducescatter_torch_tensors(self):
        import torch
        import torch.distributed
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

    def test_executor_on_local_communicator_threads(self):
        """Each rank's Python thread calls Executor.execute (the GIL is released while it waits)."""
        comm = msccl.Communicator.local(self.ranks)
        self.assertTrue(comm.is_local)
        self.assertEqual(comm.rank, -1)
        registry = msccl.PlanRegistry()
        registry.register(msccl.compile("stdlib:allreduce/ring", defines={"ranks": self.ranks, "inplace": False}))
        n = 512
        sends = [self.rng.integers(-9, 9, n).astype(np.int32) for _ in range(self.ranks)]
        recvs = [np.zeros(n, np.int32) for _ in range(self.ranks)]
        chosen = registry.select(comm.request("allreduce", sends[0].nbytes))
        executor = msccl.Executor(comm)
        errors = []

        def rank_thread(r):
            try:
                # Raw addresses with their sizes for rank 0, arrays for the others.
                if r == 0:
                    executor.execute(sends[r].ctypes.data, recvs[r].ctypes.data, chosen, rank=r, dtype="int32",
                                     send_bytes=sends[r].nbytes, recv_bytes=recvs[r].nbytes)
                else:
                    executor.execute(sends[r], recvs[r], chosen.plan, rank=r)
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=rank_thread, args=(r,)) for r in range(self.ranks)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for r in range(self.ranks):
            np.testing.assert_array_equal(recvs[r], np.sum(sends, axis=0))
        with self.assertRaisesRegex(ValueError, "rank="):
            executor.execute(sends[0], recvs[0], chosen.plan)

    def test_avg(self):
        """op='avg': the sum divided by the rank count (integers truncated, as ncclAvg)."""
        plan = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 4, "inplace": False})
        sends = [np.arange(64, dtype=np.float32) * (r + 1) for r in range(4)]
        recvs = [np.zeros(64, np.float32) for _ in range(4)]
        msccl.execute_local(plan, sends, recvs, op="avg")
        for r in range(4):
            np.testing.assert_array_equal(recvs[r], np.sum(sends, axis=0) / 4)
        isends = [np.full(16, 3 * r + 1, np.int32) for r in range(4)]
        irecvs = [np.zeros(16, np.int32) for _ in range(4)]
        msccl.execute_local(plan, isends, irecvs, op="avg")
        for r in range(4):
            np.testing.assert_array_equal(irecvs[r], np.full(16, (1 + 4 + 7 + 10) // 4, np.int32))
        if HAVE_TORCH:
            import torch.distributed as dist
            recvs = [np.zeros(64, np.float32) for _ in range(4)]
            msccl.execute_local(plan, sends, recvs, op=dist.ReduceOp.AVG)
            np.testing.assert_array_equal(recvs[0], np.sum(sends, axis=0) / 4)

    def test_abort(self):
        """After abort (from any thread), every call raises at once."""
        comm = msccl.Communicator.local(2)
        executor = msccl.Executor(comm)
        plan = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 2, "inplace": False})
        executor.abort()
        with self.assertRaisesRegex(msccl.ExecutionError, "aborted"):
            executor.execute(np.zeros(64, np.float32), np.zeros(64, np.float32), plan, rank=0)

    def test_sizes_that_do_not_fit_the_plan(self):
        """Both rank threads call with a receive buffer of half the size: ArgumentError on each."""
        comm = msccl.Communicator.local(2)
        executor = msccl.Executor(comm)
        executor.set_timeout(30)
        plan = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 2, "inplace": False})
        errors = [None, None]

        def rank_thread(r):
            try:
                executor.execute(np.zeros(64, np.float32), np.zeros(32, np.float32), plan, rank=r)
            except Exception as e:  # checked below
                errors[r] = e

        threads = [threading.Thread(target=rank_thread, args=(r,)) for r in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for e in errors:
            self.assertIsInstance(e, msccl.ArgumentError)
            self.assertIsInstance(e, ValueError)
            self.assertIn("256", str(e))  # the plan's sizes for the 256-byte message

    def test_device_tensor_is_refused(self):
        class CudaTensor:  # what the module reads of a torch.Tensor on a GPU
            class device:
                type = "cuda"

            def data_ptr(self):
                return 4096

            def element_size(self):
                return 4

            def numel(self):
                return 16

        plan = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 2})
        with self.assertRaisesRegex(ValueError, "device 'cuda'"):
            msccl.execute_local(plan, [CudaTensor()] * 2, [CudaTensor()] * 2)

    def test_from_env_without_a_launcher(self):
        saved = {v: os.environ.pop(v) for v in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_SIZE",
                                                 "PMI_SIZE", "PMIX_RANK", "PMI_RANK", "MPI_LOCALNRANKS")
                 if v in os.environ}
        try:
            with self.assertRaisesRegex(msccl.Error, "MASTER_ADDR"):
                msccl.Communicator.from_env()
        finally:
            os.environ.update(saved)

    def test_execution_error_kind(self):
        plan = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 2, "inplace": False})
        # 6 bytes cannot be cut into the plan's chunks of 4-byte elements.
        sends = [np.zeros(6, np.uint8) for _ in range(2)]
        recvs = [np.zeros(6, np.uint8) for _ in range(2)]
        with self.assertRaises(msccl.ExecutionError) as cm:
            msccl.execute_local(plan, sends, recvs, dtype="float32")
        self.assertEqual(cm.exception.kind, "InvalidSize")
        self.assertTrue(str(cm.exception))


def _alltoallv_expected(counts, q, sends):
    """Rank q's AllToAllV output: block p is counts[p][q] elements of rank p's row from its prefix up to q."""
    blocks = []
    for p in range(len(counts)):
        start = int(sum(counts[p][:q]))
        blocks.append(sends[p][start:start + int(counts[p][q])])
    return np.concatenate(blocks)


def _alltoallv_input(counts, r):
    return (np.arange(int(sum(counts[r])), dtype=np.int32) + 100000 * r).astype(np.int32)


class AllToAllVTest(unittest.TestCase):
    """Executor.execute(..., counts=) with stdlib:alltoallv/allpairs on 4 rank threads."""
    ranks = 4

    def run_matrix(self, executor, plan, counts):
        n = self.ranks
        mat = np.asarray(counts)
        sends = [_alltoallv_input(mat, r) for r in range(n)]
        recvs = [np.full(int(mat[:, q].sum()), -1, np.int32) for q in range(n)]
        errors = []

        def rank_thread(r):
            try:
                # A 2-D NumPy array on even ranks, a list of lists on odd ones: the same matrix.
                executor.execute(sends[r], recvs[r], plan, rank=r, counts=mat if r % 2 == 0 else mat.tolist())
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=rank_thread, args=(r,)) for r in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for q in range(n):
            np.testing.assert_array_equal(recvs[q], _alltoallv_expected(mat, q, sends))

    def test_matrices(self):
        plan = msccl.compile("stdlib:alltoallv/allpairs", defines={"ranks": self.ranks})
        executor = msccl.Executor(msccl.Communicator.local(self.ranks))
        rng = np.random.default_rng(3)
        self.run_matrix(executor, plan, np.full((4, 4), 64))
        self.run_matrix(executor, plan, rng.integers(0, 300, (4, 4)))
        zero_heavy = np.zeros((4, 4), np.int64)
        zero_heavy[1, 3] = 999
        zero_heavy[2, 2] = 7
        self.run_matrix(executor, plan, zero_heavy)

    def test_bad_counts(self):
        plan = msccl.compile("stdlib:alltoallv/allpairs", defines={"ranks": self.ranks})
        fixed = msccl.compile("stdlib:allreduce/ring", defines={"ranks": self.ranks, "inplace": False})
        executor = msccl.Executor(msccl.Communicator.local(self.ranks))
        x = np.zeros(64, np.int32)
        with self.assertRaisesRegex(msccl.ArgumentError, "fixed sizes"):
            executor.execute(x, x.copy(), fixed, rank=0, counts=[[1] * 4] * 4)
        with self.assertRaisesRegex(msccl.ArgumentError, "executeV"):
            executor.execute(x, x.copy(), plan, rank=0)
        with self.assertRaisesRegex(ValueError, "row 1"):
            executor.execute(x, x.copy(), plan, rank=0, counts=[[1] * 4, [1] * 3, [1] * 4, [1] * 4])
        with self.assertRaisesRegex(ValueError, "negative"):
            executor.execute(x, x.copy(), plan, rank=0, counts=[[-1] * 4] * 4)


def _unique_id_rank1(uid, queue):
    """Rank 1 of the unique-id test, in a spawned interpreter."""
    try:
        comm = msccl.Communicator.init_rank(uid, 2, 1)
        plan = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 2, "inplace": False})
        x = np.arange(256, dtype=np.float32) * 2
        y = np.zeros_like(x)
        executor = msccl.Executor(comm)
        executor.execute(x, y, plan)
        v = msccl.compile("stdlib:alltoallv/allpairs", defines={"ranks": 2})
        received = []
        for counts in UniqueIdTest.V_COUNTS:
            send = _alltoallv_input(np.asarray(counts), 1)
            recv = np.full(int(np.asarray(counts)[:, 1].sum()), -1, np.int32)
            executor.execute(send, recv, v, counts=counts)
            received.append(recv.tolist())
        with open("/proc/self/maps") as maps:
            mpi_loaded = any("libmpi" in line for line in maps)
        queue.put(("ok", comm.rank, comm.size, y.tolist(), mpi_loaded, received))
    except Exception as e:  # sent to the parent
        queue.put(("error", repr(e)))


class UniqueIdTest(unittest.TestCase):
    V_COUNTS = [[[3, 500], [0, 41]], [[0, 0], [7, 0]], [[3, 500], [0, 41]]]  # the last: a cached session

    def test_two_processes_from_a_unique_id(self):
        """get_unique_id here (rank 0), init_rank in this process and in a spawned one, no MPI."""
        os.environ["MSCCL_BOOTSTRAP_TIMEOUT"] = "40"  # a child that died fails the test in 40 s, not 120 s
        uid = msccl.get_unique_id()
        self.assertIsInstance(uid, bytes)
        self.assertEqual(len(uid), 128)
        ctx = multiprocessing.get_context("spawn")
        queue = ctx.Queue()
        child = ctx.Process(target=_unique_id_rank1, args=(uid, queue))
        child.start()
        try:
            comm = msccl.Communicator.init_rank(uid, 2, 0)
            self.assertEqual((comm.rank, comm.size), (0, 2))
            plan = msccl.compile("stdlib:allreduce/ring", defines={"ranks": 2, "inplace": False})
            x = np.arange(256, dtype=np.float32)
            y = np.zeros_like(x)
            executor = msccl.Executor(comm)
            executor.execute(x, y, plan)
            # AllToAllV across the two processes, each matrix checked element by element on both ranks.
            v = msccl.compile("stdlib:alltoallv/allpairs", defines={"ranks": 2})
            for counts in self.V_COUNTS:
                mat = np.asarray(counts)
                sends = [_alltoallv_input(mat, r) for r in range(2)]
                recv = np.full(int(mat[:, 0].sum()), -1, np.int32)
                executor.execute(sends[0], recv, v, counts=mat)
                np.testing.assert_array_equal(recv, _alltoallv_expected(mat, 0, sends))
            # The executors' sessions are freed collectively: drop ours as the child drops its own.
            del executor
            result = queue.get(timeout=60)
        finally:
            child.join(timeout=60)
        self.assertEqual(result[0], "ok", result)
        self.assertEqual(result[1:3], (1, 2))
        np.testing.assert_array_equal(y, np.arange(256, dtype=np.float32) * 3)
        np.testing.assert_array_equal(np.array(result[3], np.float32), y)
        self.assertEqual(child.exitcode, 0)
        # The unique-id path loads no MPI (libmsccl links none; only Communicator.from_mpi loads it).
        self.assertFalse(result[4], "the child process mapped libmpi")
        for counts, got in zip(self.V_COUNTS, result[5]):
            mat = np.asarray(counts)
            sends = [_alltoallv_input(mat, r) for r in range(2)]
            np.testing.assert_array_equal(np.array(got, np.int32), _alltoallv_expected(mat, 1, sends))
        self.assertEqual(len(result[5]), len(self.V_COUNTS))
        with open("/proc/self/maps") as maps:
            self.assertFalse(any("libmpi" in line for line in maps), "this process mapped libmpi")

    def test_bad_unique_id(self):
        with self.assertRaisesRegex(ValueError, "128 bytes"):
            msccl.Communicator.init_rank(b"short", 2, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
