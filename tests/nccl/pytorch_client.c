/* pytorch_client.c - NCCL calls in the order PyTorch's ProcessGroupNCCL makes them (nccl.pytorch).
 *
 * Run under libmsccl_nccl.so with MSCCL_BACKEND=cpu and no real NCCL (MSCCL_NCCL_LIB_PATH points
 * nowhere), so a call that no plan answers fails: the client checks every result and every return
 * code. The order follows torch/csrc/distributed/c10d (ProcessGroupNCCL.cpp, NCCLUtils.cpp) and
 * torch/csrc/cuda/nccl.cpp: the unique id from rank 0 through the store (MPI_Bcast here), the
 * world communicator with a config (non-blocking), ncclCommGetAsyncError polled until it is ready
 * and after every call as the watchdog does, DDP's start-up broadcast of the parameters, a
 * sub-group communicator by ncclCommSplit (tensor parallel: pairs of ranks), coalesced gradient
 * buckets (grouped allreduces of unequal, odd sizes, one of them ncclAvg), a PreMulSum allreduce
 * (gradient pre-division), all_to_all_single with splits (grouped send/recv, zero counts left out
 * by PyTorch are avoided here: every split is at least 1), equal all_to_all, a reduce to rank 0,
 * then finalize and destroy. Prints "pytorch_client: N calls, F failure(s)". */
#include <mpi.h>
#include <nccl.h>

#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks, failures, calls;

#define CALL(x)                                                                                                 \
  do {                                                                                                          \
    ncclResult_t r_ = (x);                                                                                      \
    ++calls;                                                                                                    \
    if (r_ != ncclSuccess && r_ != ncclInProgress) {                                                            \
      fprintf(stderr, "rank %d: %s failed: %d %s\n", rank, #x, (int)r_, ncclGetLastError(NULL));                \
      ++failures;                                                                                               \
    }                                                                                                           \
  } while (0)

/* The watchdog thread of a stuck call: abort its communicator after 300 ms. */
static void *abortLater(void *comm) {
  usleep(300 * 1000);
  ncclCommAbort((ncclComm_t)comm);
  return NULL;
}

static void expect(const char *what, size_t i, float got, float want) {
  if (got != want && failures < 20) {
    fprintf(stderr, "rank %d: %s: element %zu is %g, expected %g\n", rank, what, i, got, want);
    ++failures;
  }
}

/* The watchdog's poll: no asynchronous error may be pending. */
static void watchdog(ncclComm_t comm) {
  ncclResult_t async = ncclInternalError;
  CALL(ncclCommGetAsyncError(comm, &async));
  if (async != ncclSuccess) {
    fprintf(stderr, "rank %d: ncclCommGetAsyncError reports %d\n", rank, (int)async);
    ++failures;
  }
}

static void stuckCall(ncclComm_t tp, float *a, float *b, cudaStream_t stream) {
  /* A stuck call: rank 0 allreduces on its pair, rank 1 never does; rank 0's watchdog aborts the
     communicator, the call returns an error. Rank 1 aborts its side too; the other pair ends
     normally. */
  if (rank < 2) {
    if (rank == 0) {
      pthread_t watchdogThread;
      pthread_create(&watchdogThread, NULL, abortLater, tp);
      struct timespec t0, t1;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      ncclResult_t stuck = ncclAllReduce(a, b, 2000, ncclFloat32, ncclSum, tp, stream);
      clock_gettime(CLOCK_MONOTONIC, &t1);
      pthread_join(watchdogThread, NULL);
      double secs = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
      if (stuck == ncclSuccess || secs > 10) {
        fprintf(stderr, "rank 0: the stuck allreduce returned %d after %.1f s\n", (int)stuck, secs);
        ++failures;
      }
      printf("stuck call aborted: returned %d after %.2f s\n", (int)stuck, secs);
    } else {
      CALL(ncclCommAbort(tp));
    }
  } else {
    CALL(ncclCommFinalize(tp));
    CALL(ncclCommDestroy(tp));
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const size_t n = (size_t)nranks;
  cudaStream_t stream = (cudaStream_t)(uintptr_t)(0x7000 + rank);

  ncclUniqueId id;
  if (rank == 0)
    CALL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t world;
  CALL(ncclCommInitRankConfig(&world, nranks, id, rank, &config));
  for (int spins = 0;; ++spins) { /* non-blocking: ready once the async error is not ncclInProgress */
    ncclResult_t async = ncclInProgress;
    CALL(ncclCommGetAsyncError(world, &async));
    if (async != ncclInProgress)
      break;
    if (spins > 1000000) {
      fprintf(stderr, "rank %d: the communicator never became ready\n", rank);
      ++failures;
      break;
    }
  }

  const size_t N = 1 << 14;
  float *a = malloc(N * n * sizeof(float)), *b = malloc(N * n * sizeof(float));

  /* DDP: broadcast the parameters from rank 0 (in place, 1000 + 7 elements). */
  for (size_t i = 0; i < 1007; ++i)
    a[i] = rank == 0 ? (float)(i % 113) : -1.f;
  CALL(ncclBroadcast(a, a, 1007, ncclFloat32, 0, world, stream));
  watchdog(world);
  for (size_t i = 0; i < 1007; ++i)
    expect("broadcast", i, a[i], (float)(i % 113));

  /* broadcast_object_list from rank 2 (in place, 77 elements): a root-0 plan renamed for root 2. */
  for (size_t i = 0; i < 77; ++i)
    a[i] = rank == 2 ? (float)(5000 + i) : -1.f;
  CALL(ncclBroadcast(a, a, 77, ncclFloat32, 2, world, stream));
  watchdog(world);
  for (size_t i = 0; i < 77; ++i)
    expect("broadcast from 2", i, a[i], (float)(5000 + i));

  /* all_gather of int64 sizes (as all_to_all with splits needs first): int64 moves as bytes. */
  {
    long long mine = 1000000000000LL + rank, sizes[16];
    CALL(ncclAllGather(&mine, sizes, 1, ncclInt64, world, stream));
    watchdog(world);
    for (int r = 0; r < nranks; ++r)
      expect("allgather int64", (size_t)r, (float)(sizes[r] - 1000000000000LL), (float)r);
  }

  /* Tensor-parallel pairs: ranks {0,1} and {2,3}. */
  ncclComm_t tp;
  CALL(ncclCommSplit(world, rank / 2, rank, &tp, NULL));
  for (size_t i = 0; i < 2000; ++i)
    a[i] = (float)(rank + (int)(i % 5));
  CALL(ncclAllReduce(a, b, 2000, ncclFloat32, ncclSum, tp, stream));
  watchdog(tp);
  for (size_t i = 0; i < 2000; ++i)
    expect("tp allreduce", i, b[i], (float)((rank / 2) * 4 + 1 + 2 * (int)(i % 5)));

  /* Coalesced gradient buckets: three allreduces in one group (sizes 4093, 1, 777), in place, the
     last averaged (ncclAvg). */
  const size_t sizes[3] = {4093, 1, 777};
  float *bucket[3] = {a, a + 4096, a + 8192};
  for (int k = 0; k < 3; ++k)
    for (size_t i = 0; i < sizes[k]; ++i)
      bucket[k][i] = (float)(rank * (k + 1) + (int)(i % 11));
  CALL(ncclGroupStart());
  CALL(ncclAllReduce(bucket[0], bucket[0], sizes[0], ncclFloat32, ncclSum, world, stream));
  CALL(ncclAllReduce(bucket[1], bucket[1], sizes[1], ncclFloat32, ncclSum, world, stream));
  CALL(ncclAllReduce(bucket[2], bucket[2], sizes[2], ncclFloat32, ncclAvg, world, stream));
  CALL(ncclGroupEnd());
  watchdog(world);
  const float rsum = (float)(nranks * (nranks - 1) / 2);
  for (int k = 0; k < 3; ++k)
    for (size_t i = 0; i < sizes[k]; ++i) {
      float sum = rsum * (float)(k + 1) + (float)(nranks * (int)(i % 11));
      expect("bucket", i, bucket[k][i], k == 2 ? sum / (float)nranks : sum);
    }

  /* Gradient pre-division: PreMulSum with 1/world_size, the same on every rank. */
  float scale = 1.0f / (float)nranks;
  ncclRedOp_t premul;
  CALL(ncclRedOpCreatePreMulSum(&premul, &scale, ncclFloat32, ncclScalarHostImmediate, world));
  for (size_t i = 0; i < 1024; ++i)
    a[i] = (float)(nranks * (rank + 1));
  CALL(ncclAllReduce(a, b, 1024, ncclFloat32, premul, world, stream));
  CALL(ncclRedOpDestroy(premul, world));
  watchdog(world);
  for (size_t i = 0; i < 1024; ++i)
    expect("premulsum", i, b[i], (float)(nranks * (nranks + 1) / 2));

  /* all_to_all_single with splits: rank r sends 10 + 3r + p elements to rank p. */
  size_t sendAt = 0, recvAt = 0;
  for (size_t p = 0; p < n; ++p)
    for (size_t i = 0; i < 10 + 3 * (size_t)rank + p; ++i)
      a[sendAt++] = (float)(rank * 10000 + (int)p * 100 + (int)i);
  CALL(ncclGroupStart());
  sendAt = 0;
  for (size_t p = 0; p < n; ++p) {
    size_t out = 10 + 3 * (size_t)rank + p, in = 10 + 3 * p + (size_t)rank;
    CALL(ncclSend(a + sendAt, out, ncclFloat32, (int)p, world, stream));
    CALL(ncclRecv(b + recvAt, in, ncclFloat32, (int)p, world, stream));
    sendAt += out;
    recvAt += in;
  }
  CALL(ncclGroupEnd());
  watchdog(world);
  recvAt = 0;
  for (size_t p = 0; p < n; ++p)
    for (size_t i = 0; i < 10 + 3 * p + (size_t)rank; ++i, ++recvAt)
      expect("all_to_all_single splits", recvAt, b[recvAt], (float)((int)p * 10000 + rank * 100 + (int)i));

  /* all_to_all with equal splits (257 elements per peer). */
  for (size_t p = 0; p < n; ++p)
    for (size_t i = 0; i < 257; ++i)
      a[p * 257 + i] = (float)(rank * 10000 + (int)p * 1000 + (int)i);
  CALL(ncclGroupStart());
  for (size_t p = 0; p < n; ++p) {
    CALL(ncclSend(a + p * 257, 257, ncclFloat32, (int)p, world, stream));
    CALL(ncclRecv(b + p * 257, 257, ncclFloat32, (int)p, world, stream));
  }
  CALL(ncclGroupEnd());
  watchdog(world);
  for (size_t p = 0; p < n; ++p)
    for (size_t i = 0; i < 257; ++i)
      expect("all_to_all", p * 257 + i, b[p * 257 + i], (float)((int)p * 10000 + rank * 1000 + (int)i));

  /* A loss reduced to rank 0. */
  for (size_t i = 0; i < 33; ++i)
    a[i] = (float)(rank + 1);
  CALL(ncclReduce(a, b, 33, ncclFloat32, ncclSum, 0, world, stream));
  watchdog(world);
  if (rank == 0)
    for (size_t i = 0; i < 33; ++i)
      expect("reduce", i, b[i], (float)(nranks * (nranks + 1) / 2));

  /* dist.reduce(dst=3): the root-0 plan renamed for root 3; other ranks' recv buffers untouched. */
  for (size_t i = 0; i < 45; ++i) {
    a[i] = (float)(rank * 100 + i);
    b[i] = -7.f;
  }
  CALL(ncclReduce(a, b, 45, ncclFloat32, ncclSum, 3, world, stream));
  watchdog(world);
  for (size_t i = 0; i < 45; ++i)
    expect("reduce to 3", i, b[i], rank == 3 ? (float)(100 * nranks * (nranks - 1) / 2 + nranks * (int)i) : -7.f);

  stuckCall(tp, a, b, stream);
  CALL(ncclCommFinalize(world));
  CALL(ncclCommDestroy(world));
  int all = 0, allCalls = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&calls, &allCalls, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("pytorch_client: %d calls, %d failure(s)\n", allCalls, all);
  free(a);
  free(b);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
