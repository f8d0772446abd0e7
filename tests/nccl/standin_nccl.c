/* standin_nccl.c - a stand-in for the real NCCL (libnccl.so.2) in the nccl tests.
 *
 * libmsccl_nccl.so forwards every call it has no plan for to the library at
 * MSCCL_NCCL_LIB_PATH; this one appends one line per call, with its arguments, to the file
 * STANDIN_NCCL_LOG (O_APPEND: lines of concurrent ranks do not mix), so the test can check
 * that the forwarded calls arrive with their arguments intact. It moves no data. */
#include <nccl.h>

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ncclComm {
  int rank, nranks;
};

static void logf_(const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if (n > (int)sizeof line - 2)
    n = (int)sizeof line - 2;
  line[n++] = '\n';
  const char *path = getenv("STANDIN_NCCL_LOG");
  int fd = open(path ? path : "standin-nccl.log", O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    if (write(fd, line, (size_t)n) < 0) {
    }
    close(fd);
  }
}

static const char *hex16(const char *p, char *buf) {
  for (int i = 0; i < 16; ++i)
    sprintf(buf + 2 * i, "%02x", (unsigned char)p[i]);
  return buf;
}

ncclResult_t ncclGetVersion(int *version) {
  *version = 22809;
  return ncclSuccess;
}
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, "standin-%d", (int)getpid());
  char buf[40];
  logf_("ncclGetUniqueId id=%s", hex16(id->internal, buf));
  return ncclSuccess;
}
/* STANDIN_NCCL_FAIL_INIT: "all", or a comma-separated list of ranks whose init fails. */
static int failsInit(int rank) {
  const char *v = getenv("STANDIN_NCCL_FAIL_INIT");
  if (!v)
    return 0;
  if (strcmp(v, "all") == 0)
    return 1;
  for (const char *p = v; *p; p += strcspn(p, ","), p += *p == ',')
    if (atoi(p) == rank)
      return 1;
  return 0;
}
static const char *lastError = "standin: last error";
static char lastErrorBuf[64];
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  char buf[40];
  if (failsInit(rank)) { /* as NCCL without a usable GPU; names the rank, as NCCL's words do */
    *comm = NULL;
    snprintf(lastErrorBuf, sizeof lastErrorBuf, "standin: no CUDA device for rank %d", rank);
    lastError = lastErrorBuf;
    return ncclUnhandledCudaError;
  }
  *comm = malloc(sizeof(struct ncclComm));
  (*comm)->rank = rank;
  (*comm)->nranks = nranks;
  logf_("ncclCommInitRank nranks=%d rank=%d id=%s", nranks, rank, hex16(id.internal, buf));
  return ncclSuccess;
}
ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config) {
  (void)config;
  return ncclCommInitRank(comm, nranks, id, rank);
}
ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  logf_("ncclCommDestroy rank=%d", comm->rank);
  free(comm);
  return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t comm) { return ncclCommDestroy(comm); }
ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  logf_("ncclCommFinalize rank=%d", comm->rank);
  return ncclSuccess;
}
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  *count = comm->nranks;
  return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  *rank = comm->rank;
  return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
  *device = 100 + comm->rank;
  return ncclSuccess;
}
const char *ncclGetErrorString(ncclResult_t r) { return r == ncclSuccess ? "standin: no error" : "standin: error"; }
const char *ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return lastError;
}
ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  logf_("ncclAllReduce rank=%d send=%p recv=%p count=%zu type=%d op=%d stream=%p", comm->rank, s, r, count, (int)t,
        (int)op, (void *)stream);
  return ncclSuccess;
}
ncclResult_t ncclAllGather(const void *s, void *r, size_t count, ncclDataType_t t, ncclComm_t comm,
                           cudaStream_t stream) {
  logf_("ncclAllGather rank=%d send=%p recv=%p count=%zu type=%d stream=%p", comm->rank, s, r, count, (int)t,
        (void *)stream);
  return ncclSuccess;
}
ncclResult_t ncclReduceScatter(const void *s, void *r, size_t count, ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  logf_("ncclReduceScatter rank=%d send=%p recv=%p count=%zu type=%d op=%d stream=%p", comm->rank, s, r, count, (int)t,
        (int)op, (void *)stream);
  return ncclSuccess;
}
ncclResult_t ncclAlltoAll(const void *s, void *r, size_t count, ncclDataType_t t, ncclComm_t comm,
                          cudaStream_t stream) {
  logf_("ncclAlltoAll rank=%d send=%p recv=%p count=%zu type=%d stream=%p", comm->rank, s, r, count, (int)t,
        (void *)stream);
  return ncclSuccess;
}
ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, ncclDataType_t t, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  logf_("ncclBroadcast rank=%d send=%p recv=%p count=%zu type=%d root=%d stream=%p", comm->rank, s, r, count, (int)t,
        root, (void *)stream);
  return ncclSuccess;
}
ncclResult_t ncclReduce(const void *s, void *r, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  logf_("ncclReduce rank=%d send=%p recv=%p count=%zu type=%d op=%d root=%d stream=%p", comm->rank, s, r, count,
        (int)t, (int)op, root, (void *)stream);
  return ncclSuccess;
}
ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  logf_("ncclSend rank=%d send=%p count=%zu type=%d peer=%d stream=%p", comm->rank, s, count, (int)t, peer,
        (void *)stream);
  return ncclSuccess;
}
ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t t, int peer, ncclComm_t comm, cudaStream_t stream) {
  logf_("ncclRecv rank=%d recv=%p count=%zu type=%d peer=%d stream=%p", comm->rank, r, count, (int)t, peer,
        (void *)stream);
  return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  (void)comm;
  *asyncError = ncclSuccess;
  return ncclSuccess;
}
/* A split the stand-in cannot size (it sees one rank): logged, a communicator of unknown layout. */
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config) {
  (void)config;
  logf_("ncclCommSplit rank=%d color=%d key=%d", comm->rank, color, key);
  *newcomm = NULL;
  if (color == NCCL_SPLIT_NOCOLOR)
    return ncclSuccess;
  struct ncclComm *c = malloc(sizeof *c);
  c->rank = -1;
  c->nranks = -1;
  *newcomm = c;
  return ncclSuccess;
}
/* Custom ops get ids from 1000, so a test can tell the stand-in's twin from the shim's own id. */
static int nextOp = 1000;
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t t, ncclScalarResidence_t residence,
                                      ncclComm_t comm) {
  *op = (ncclRedOp_t)nextOp++;
  logf_("ncclRedOpCreatePreMulSum rank=%d op=%d type=%d residence=%d scalar=%p", comm->rank, (int)*op, (int)t,
        (int)residence, scalar);
  return ncclSuccess;
}
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  logf_("ncclRedOpDestroy rank=%d op=%d", comm->rank, (int)op);
  return ncclSuccess;
}
ncclResult_t ncclGroupStart(void) {
  logf_("ncclGroupStart pid=%d", (int)getpid());
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd(void) {
  logf_("ncclGroupEnd pid=%d", (int)getpid());
  return ncclSuccess;
}
