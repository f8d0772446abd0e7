/* allreduce.c - an NCCL program, unchanged, whose AllReduce runs an msccl plan.
 *
 * Rank 0 makes the unique id, MPI hands it to the others, every rank joins with
 * ncclCommInitRank and sums a vector with ncclAllReduce. With MSCCL_BACKEND=cpu the buffers are
 * host memory (the test mode); with the default CUDA backend they would be cudaMalloc'ed.
 * MSCCL_DEBUG=INFO says which plan ran. Exit 0 when the sum is right on every rank. */
#include <mpi.h>
#include <nccl.h>

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                                    \
  do {                                                                                                                 \
    ncclResult_t r_ = (call);                                                                                          \
    if (r_ != ncclSuccess) {                                                                                           \
      fprintf(stderr, "%s: %s (%s)\n", #call, ncclGetErrorString(r_), ncclGetLastError(NULL));                         \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                                    \
    }                                                                                                                  \
  } while (0)

int main(int argc, char **argv) {
  int rank, nranks;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  ncclUniqueId id;
  if (rank == 0)
    CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  CHECK(ncclCommInitRank(&comm, nranks, id, rank));

  const size_t count = 1 << 16;
  float *send = malloc(count * sizeof(float)), *recv = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i)
    send[i] = (float)(rank + 1) * (float)(i % 16);
  CHECK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, NULL));
  int wrong = 0;
  for (size_t i = 0; i < count; ++i)
    wrong += recv[i] != (float)(nranks * (nranks + 1) / 2) * (float)(i % 16);
  printf("rank %d: allreduce of %zu floats: %s\n", rank, count, wrong ? "WRONG" : "correct");
  CHECK(ncclCommDestroy(comm));
  free(send);
  free(recv);
  int all = 0;
  MPI_Allreduce(&wrong, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
  return all ? 1 : 0;
}
