/* nccl_client.c - an NCCL application in plain C, as the nccl tests run it.
 *
 * It calls NCCL's API exactly as an application does: rank 0 makes the unique id, MPI (the
 * application's own launcher, not the library's) copies it to every rank, every rank calls
 * ncclCommInitRank, then collectives. Launched under mpirun with
 * LD_PRELOAD=libmsccl_nccl.so MSCCL_BACKEND=cpu MSCCL_PLANS=<plans>: the four planned
 * collectives must give correct results (checked here); the calls that have no plan must reach
 * the NCCL behind it (the tests' stand-in, MSCCL_NCCL_LIB_PATH) with their arguments, which
 * this client prints as "expect: <line>" for the test to find in the stand-in's log.
 * Exit status 0 when every check passed; each failure is printed. */
#include <mpi.h>
#include <nccl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
static int rank = 0, nranks = 1;

#define NCCLCHECK(call)                                                                                                \
  do {                                                                                                                 \
    ncclResult_t r_ = (call);                                                                                          \
    if (r_ != ncclSuccess) {                                                                                           \
      fprintf(stderr, "rank %d: %s failed: %s (%s)\n", rank, #call, ncclGetErrorString(r_), ncclGetLastError(NULL));   \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                                    \
    }                                                                                                                  \
  } while (0)

static void expectEq(const char *what, size_t i, float got, float want) {
  if (got != want) {
    if (failures < 10)
      fprintf(stderr, "rank %d: %s: element %zu is %g, expected %g\n", rank, what, i, got, want);
    ++failures;
  }
}

static void plannedExtras2(ncclComm_t comm, float *send, float *recv, size_t N, cudaStream_t stream);

/* Planned calls beyond the four basic collectives: odd counts, a group, all_to_all_single, count 0, Broadcast and
   Reduce, avg and PreMulSum, ncclCommSplit (each checks its results; `send`/`recv` hold N*n floats). */
static void plannedExtras(ncclComm_t comm, float *send, float *recv, size_t N, cudaStream_t stream) {
  const size_t n = (size_t)nranks;
  /* Counts the plans' chunks do not divide (odd, prime): planned all the same, with uneven chunks
     (runtime/UnevenChunks.h). */
  const size_t P = 4001, Q = 997;
  for (size_t i = 0; i < P; ++i)
    send[i] = (float)(rank + (int)(i % 7));
  NCCLCHECK(ncclAllReduce(send, recv, P, ncclFloat32, ncclSum, comm, stream));
  for (size_t i = 0; i < P; ++i)
    expectEq("odd allreduce", i, recv[i], (float)(nranks * (nranks - 1) / 2 + nranks * (int)(i % 7)));
  for (size_t i = 0; i < P; ++i)
    send[i] = (float)(rank * 10000 + (int)i);
  NCCLCHECK(ncclAllGather(send, recv, P, ncclFloat32, comm, stream));
  for (size_t r = 0; r < n; ++r)
    for (size_t i = 0; i < P; ++i)
      expectEq("odd allgather", r * P + i, recv[r * P + i], (float)(r * 10000 + i));
  for (size_t j = 0; j < Q * n; ++j)
    send[j] = (float)(rank + (int)(j % 5));
  NCCLCHECK(ncclReduceScatter(send, recv, Q, ncclFloat32, ncclSum, comm, stream));
  for (size_t i = 0; i < Q; ++i)
    expectEq("odd reducescatter", i, recv[i], (float)(nranks * (nranks - 1) / 2 + nranks * (int)((rank * Q + i) % 5)));
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < Q; ++i)
      send[j * Q + i] = (float)(rank * 100000 + (int)j * 1000 + (int)i);
  NCCLCHECK(ncclAlltoAll(send, recv, Q, ncclFloat32, comm, stream));
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < Q; ++i)
      expectEq("odd alltoall", j * Q + i, recv[j * Q + i], (float)((int)j * 100000 + rank * 1000 + (int)i));

  /* A group: nothing starts before ncclGroupEnd (the planned allreduce has not touched recv),
     planned and forwarded calls mixed (the float64 one reaches NCCL inside a real group). */
  double *g = malloc(8 * sizeof(double));
  for (size_t i = 0; i < N; ++i)
    send[i] = (float)(rank + (int)(i % 7)), recv[i] = -1.f;
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclGroupStart()); /* nested */
  NCCLCHECK(ncclAllReduce(send, recv, N, ncclFloat32, ncclSum, comm, stream));
  NCCLCHECK(ncclGroupEnd());
  NCCLCHECK(ncclAllReduce(g, g, 8, ncclFloat64, ncclSum, comm, stream));
  if (recv[0] != -1.f) {
    fprintf(stderr, "rank %d: a grouped allreduce ran before ncclGroupEnd\n", rank);
    ++failures;
  }
  NCCLCHECK(ncclGroupEnd());
  printf("expect: ncclAllReduce rank=%d send=%p recv=%p count=8 type=%d op=%d stream=%p\n", rank, (void *)g, (void *)g,
         (int)ncclFloat64, (int)ncclSum, (void *)stream);
  for (size_t i = 0; i < N; ++i)
    expectEq("grouped allreduce", i, recv[i], (float)(nranks * (nranks - 1) / 2 + nranks * (int)(i % 7)));
  free(g);

  /* PyTorch's all_to_all_single: one ncclSend and one ncclRecv per peer (itself included) in a
     group; equal counts run as an AllToAll plan, unequal ones (splits) as an AllToAllV plan. */
  for (int split = 0; split < 2; ++split) {
    size_t sendAt = 0, recvAt = 0;
    for (size_t j = 0; j < n; ++j) /* rank r sends 100 + 10*r + j (split) or 128 elements to rank j */
      for (size_t i = 0; i < (split ? 100 + 10 * (size_t)rank + j : 128); ++i)
        send[sendAt++] = (float)(rank * 100000 + (int)j * 1000 + (int)i);
    NCCLCHECK(ncclGroupStart());
    sendAt = 0;
    for (size_t j = 0; j < n; ++j) {
      size_t out = split ? 100 + 10 * (size_t)rank + j : 128, in = split ? 100 + 10 * j + (size_t)rank : 128;
      NCCLCHECK(ncclSend(send + sendAt, out, ncclFloat32, (int)j, comm, stream));
      NCCLCHECK(ncclRecv(recv + recvAt, in, ncclFloat32, (int)j, comm, stream));
      sendAt += out;
      recvAt += in;
    }
    NCCLCHECK(ncclGroupEnd());
    recvAt = 0;
    for (size_t j = 0; j < n; ++j)
      for (size_t i = 0; i < (split ? 100 + 10 * j + (size_t)rank : 128); ++i, ++recvAt)
        expectEq(split ? "all_to_all_single with splits" : "all_to_all_single", recvAt, recv[recvAt],
                 (float)((int)j * 100000 + rank * 1000 + (int)i));
  }

  plannedExtras2(comm, send, recv, N, stream);
}

/* Second half of plannedExtras. */
static void plannedExtras2(ncclComm_t comm, float *send, float *recv, size_t N, cudaStream_t stream) {
  /* Count 0 (a DDP bucket can be empty): success, nothing moves, NCCL is not asked. */
  recv[0] = -7.f;
  NCCLCHECK(ncclAllReduce(send, recv, 0, ncclFloat32, ncclSum, comm, stream));
  NCCLCHECK(ncclAllGather(send, recv, 0, ncclFloat32, comm, stream));
  if (recv[0] != -7.f) {
    fprintf(stderr, "rank %d: a count-0 call wrote the buffer\n", rank);
    ++failures;
  }

  /* Broadcast and Reduce from/to root 0 through plans (odd counts: uneven chunks). */
  {
    const size_t B = 1001, Rc = 777;
    for (size_t i = 0; i < B; ++i)
      send[i] = (float)(rank * 1000 + (int)i), recv[i] = -1.f;
    NCCLCHECK(ncclBroadcast(send, recv, B, ncclFloat32, 0, comm, stream));
    for (size_t i = 0; i < B; ++i)
      expectEq("broadcast", i, recv[i], (float)i);
    for (size_t i = 0; i < Rc; ++i)
      send[i] = (float)(rank + (int)(i % 9)), recv[i] = -1.f;
    NCCLCHECK(ncclReduce(send, recv, Rc, ncclFloat32, ncclSum, 0, comm, stream));
    if (rank == 0)
      for (size_t i = 0; i < Rc; ++i)
        expectEq("reduce", i, recv[i], (float)(nranks * (nranks - 1) / 2 + nranks * (int)(i % 9)));
    /* Other roots: the root-0 plans renamed (msccl::rootedPlan). A non-root's recvbuff stays as
       it was (NCCL's is the root's alone), uint8 moves as bytes. */
    unsigned char *from = (unsigned char *)send, *to = (unsigned char *)recv;
    for (size_t i = 0; i < 77; ++i)
      from[i] = rank == 1 ? (unsigned char)(200 + i % 50) : 0, to[i] = 1;
    NCCLCHECK(ncclBroadcast(from, to, 77, ncclUint8, 1, comm, stream));
    for (size_t i = 0; i < 77; ++i)
      expectEq("broadcast from 1", i, (float)to[i], (float)(200 + i % 50));
    for (size_t i = 0; i < 99; ++i)
      send[i] = (float)((rank * 37 + (int)i) % 101), recv[i] = -1.f;
    NCCLCHECK(ncclReduce(send, recv, 99, ncclFloat32, ncclSum, 2, comm, stream));
    for (size_t i = 0; i < 99; ++i) {
      float sum = 0.f;
      for (int r = 0; r < nranks; ++r)
        sum += (float)((r * 37 + (int)i) % 101);
      expectEq("reduce to 2", i, recv[i], rank == 2 ? sum : -1.f);
    }
  }

  /* ncclAvg (float32 and int32: the sum divided by the rank count, truncated for integers) and a
     PreMulSum whose scalar every rank shares, through the allreduce plan. */
  {
    int *is = malloc(N * sizeof(int)), *ir = malloc(N * sizeof(int));
    for (size_t i = 0; i < N; ++i)
      send[i] = (float)(rank + (int)(i % 7)), is[i] = rank * 3 + (int)(i % 5);
    NCCLCHECK(ncclAllReduce(send, recv, N, ncclFloat32, ncclAvg, comm, stream));
    for (size_t i = 0; i < N; ++i)
      expectEq("avg float32", i, recv[i], (float)(nranks * (nranks - 1) / 2 + nranks * (int)(i % 7)) / (float)nranks);
    NCCLCHECK(ncclAllReduce(is, ir, N, ncclInt32, ncclAvg, comm, stream));
    for (size_t i = 0; i < N; ++i)
      expectEq("avg int32", i, (float)ir[i], (float)((3 * nranks * (nranks - 1) / 2 + nranks * (int)(i % 5)) / nranks));
    float half = 0.5f;
    ncclRedOp_t pre;
    NCCLCHECK(ncclRedOpCreatePreMulSum(&pre, &half, ncclFloat32, ncclScalarHostImmediate, comm));
    NCCLCHECK(ncclAllReduce(send, recv, N, ncclFloat32, pre, comm, stream));
    for (size_t i = 0; i < N; ++i)
      expectEq("premulsum", i, recv[i], 0.5f * (float)(nranks * (nranks - 1) / 2 + nranks * (int)(i % 7)));
    NCCLCHECK(ncclRedOpDestroy(pre, comm));
    /* A scalar that differs between ranks: the plan would apply one; NCCL gets the call. */
    float mine = 1.0f + (float)rank;
    NCCLCHECK(ncclRedOpCreatePreMulSum(&pre, &mine, ncclFloat32, ncclScalarHostImmediate, comm));
    NCCLCHECK(ncclAllReduce(send, recv, 64, ncclFloat32, pre, comm, stream)); /* NCCL gets its own twin op */
    NCCLCHECK(ncclRedOpDestroy(pre, comm));
    free(is);
    free(ir);
  }

  /* ncclCommSplit into two groups of alternate ranks, keys reversing the order: a 2-rank
     communicator whose allreduce runs a 2-rank plan. */
  {
    ncclComm_t half = NULL;
    NCCLCHECK(ncclCommSplit(comm, rank % 2, -rank, &half, NULL));
    int hn = 0, hr = -1;
    NCCLCHECK(ncclCommCount(half, &hn));
    NCCLCHECK(ncclCommUserRank(half, &hr));
    const int wantRank = nranks / 2 - 1 - rank / 2; /* keys -rank: the highest parent rank first */
    if (hn != nranks / 2 || hr != wantRank) {
      fprintf(stderr, "rank %d: split: rank %d of %d, expected %d of %d\n", rank, hr, hn, wantRank, nranks / 2);
      ++failures;
    }
    for (size_t i = 0; i < N; ++i)
      send[i] = (float)(rank + (int)(i % 3));
    NCCLCHECK(ncclAllReduce(send, recv, N, ncclFloat32, ncclSum, half, stream));
    for (size_t i = 0; i < N; ++i) { /* the sum over the ranks of my parity */
      float want = 0;
      for (int q = rank % 2; q < nranks; q += 2)
        want += (float)(q + (int)(i % 3));
      expectEq("split allreduce", i, recv[i], want);
    }
    NCCLCHECK(ncclCommDestroy(half));
    ncclComm_t none = comm;
    NCCLCHECK(ncclCommSplit(comm, rank == 0 ? 0 : NCCL_SPLIT_NOCOLOR, 0, &none, NULL));
    if ((rank == 0) != (none != NULL)) {
      fprintf(stderr, "rank %d: NCCL_SPLIT_NOCOLOR gave %p\n", rank, (void *)none);
      ++failures;
    }
    if (none)
      NCCLCHECK(ncclCommDestroy(none));
  }

}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const size_t n = (size_t)nranks;

  ncclUniqueId id;
  if (rank == 0)
    NCCLCHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  NCCLCHECK(ncclCommInitRank(&comm, nranks, id, rank));
  int count = 0, me = -1, version = 0;
  NCCLCHECK(ncclCommCount(comm, &count));
  NCCLCHECK(ncclCommUserRank(comm, &me));
  NCCLCHECK(ncclGetVersion(&version));
  if (count != nranks || me != rank) {
    fprintf(stderr, "rank %d: ncclCommCount=%d ncclCommUserRank=%d\n", rank, count, me);
    ++failures;
  }
  cudaStream_t stream = (cudaStream_t)(uintptr_t)(0x5000 + rank); /* host mode: passed through, never used */

  /* AllReduce (sum, float32, out of place). */
  const size_t N = 4096;
  float *send = malloc(N * n * sizeof(float)), *recv = malloc(N * n * sizeof(float));
  for (size_t i = 0; i < N; ++i)
    send[i] = (float)(rank + (int)(i % 7));
  NCCLCHECK(ncclAllReduce(send, recv, N, ncclFloat32, ncclSum, comm, stream));
  for (size_t i = 0; i < N; ++i)
    expectEq("allreduce", i, recv[i], (float)(nranks * (nranks - 1) / 2 + nranks * (int)(i % 7)));

  /* AllGather: C elements from each rank. */
  const size_t C = 1024;
  for (size_t i = 0; i < C; ++i)
    send[i] = (float)(rank * 1000 + (int)i);
  NCCLCHECK(ncclAllGather(send, recv, C, ncclFloat32, comm, stream));
  for (size_t r = 0; r < n; ++r)
    for (size_t i = 0; i < C; ++i)
      expectEq("allgather", r * C + i, recv[r * C + i], (float)(r * 1000 + i));

  /* ReduceScatter: C elements to each rank, summed. */
  for (size_t j = 0; j < C * n; ++j)
    send[j] = (float)(rank + (int)(j % 5));
  NCCLCHECK(ncclReduceScatter(send, recv, C, ncclFloat32, ncclSum, comm, stream));
  for (size_t i = 0; i < C; ++i)
    expectEq("reducescatter", i, recv[i],
             (float)(nranks * (nranks - 1) / 2 + nranks * (int)((rank * C + i) % 5)));

  /* AlltoAll: C elements to each peer. */
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < C; ++i)
      send[j * C + i] = (float)(rank * 100000 + (int)j * 1000 + (int)(i % 1000));
  NCCLCHECK(ncclAlltoAll(send, recv, C, ncclFloat32, comm, stream));
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < C; ++i)
      expectEq("alltoall", j * C + i, recv[j * C + i], (float)((int)j * 100000 + rank * 1000 + (int)(i % 1000)));

  plannedExtras(comm, send, recv, N, stream);

  /* Calls with no plan: forwarded with their arguments. */
  double *d = malloc(64 * sizeof(double));
  NCCLCHECK(ncclAllReduce(d, d, 64, ncclFloat64, ncclSum, comm, stream)); /* no float64 executor */
  printf("expect: ncclAllReduce rank=%d send=%p recv=%p count=64 type=%d op=%d stream=%p\n", rank, (void *)d,
         (void *)d, (int)ncclFloat64, (int)ncclSum, (void *)stream);
  NCCLCHECK(ncclAllReduce(send, recv, 333, ncclFloat32, ncclProd, comm, stream)); /* no prod */
  printf("expect: ncclAllReduce rank=%d send=%p recv=%p count=333 type=%d op=%d stream=%p\n", rank, (void *)send,
         (void *)recv, (int)ncclFloat32, (int)ncclProd, (void *)stream);
  NCCLCHECK(ncclAllReduce(send, send, 256, ncclFloat32, ncclSum, comm, stream)); /* in place: no plan */
  printf("expect: ncclAllReduce rank=%d send=%p recv=%p count=256 type=%d op=%d stream=%p\n", rank, (void *)send,
         (void *)send, (int)ncclFloat32, (int)ncclSum, (void *)stream);
  NCCLCHECK(ncclReduce(send, recv, 99, ncclFloat32, ncclProd, 2, comm, stream)); /* no prod */
  printf("expect: ncclReduce rank=%d send=%p recv=%p count=99 type=%d op=%d root=2 stream=%p\n", rank, (void *)send,
         (void *)recv, (int)ncclFloat32, (int)ncclProd, (void *)stream);
  int peer = (rank + 1) % nranks, from = (rank + nranks - 1) % nranks;
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclSend(send, 10 + (size_t)rank, ncclFloat32, peer, comm, stream));
  NCCLCHECK(ncclRecv(recv, 10 + (size_t)from, ncclFloat32, from, comm, stream));
  NCCLCHECK(ncclGroupEnd());
  printf("expect: ncclSend rank=%d send=%p count=%d type=%d peer=%d stream=%p\n", rank, (void *)send, 10 + rank,
         (int)ncclFloat32, peer, (void *)stream);
  printf("expect: ncclRecv rank=%d recv=%p count=%d type=%d peer=%d stream=%p\n", rank, (void *)recv, 10 + from,
         (int)ncclFloat32, from, (void *)stream);
  int device = -1;
  NCCLCHECK(ncclCommCuDevice(comm, &device));
  if (device != 100 + rank) { /* the stand-in's answer: forwarded to NCCL's communicator */
    fprintf(stderr, "rank %d: ncclCommCuDevice=%d, expected the stand-in's %d\n", rank, device, 100 + rank);
    ++failures;
  }

  NCCLCHECK(ncclCommDestroy(comm));
  printf("expect: ncclCommDestroy rank=%d\n", rank);
  fflush(stdout);
  int all = 0;
  MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0)
    printf("nccl_client: %d ranks, %d failure(s), NCCL version %d\n", nranks, all, version);
  free(send);
  free(recv);
  free(d);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
