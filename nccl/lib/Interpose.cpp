//===- Interpose.cpp - libmsccl_nccl.so: NCCL's C API over registered plans ---------------===//
//
// Loaded before the real NCCL (LD_PRELOAD=libmsccl_nccl.so), it exports NCCL's C API (nccl.h of
// the CUDA toolkit it was built against):
//   * ncclGetUniqueId makes our unique id (rank 0's address, runtime/Communicator.h) with the
//     real NCCL's id inside it; ncclCommInitRank builds our communicator from it (no MPI: the
//     unique-id bootstrap) and, alongside, the real NCCL's communicator from the real id, so
//     any later call can fall back (also point-to-point calls, which only some ranks make;
//     RealInit.cpp, which also says why where the real NCCL cannot make it);
//   * the registry (msccl.hpp's PlanRegistry) is filled once per process at the first init from
//     MSCCL_PLANS (a directory of .json plans and .msccl programs, compiled through the cache
//     with the -D values of MSCCL_PLANS_DEFINES="ranks=8,inplace=false");
//   * each collective asks the registry for a plan for (collective, world size, ranks per node,
//     bytes, in-place) and runs it with Executor::execute, or forwards the call unchanged to the
//     real NCCL's communicator (at any element count: runtime/UnevenChunks.h); inside a group
//     at the outermost ncclGroupEnd (Group.cpp), where send/recv sets that are an AllToAll(V)
//     run as one plan (PointToPoint.h); Gather/Scatter and every other function forward;
//   * the real NCCL is dlopen'ed (RTLD_DEEPBIND: its own calls stay inside it) from
//     MSCCL_NCCL_LIB_PATH, default libnccl.so.2; without it, a call with no plan fails with
//     ncclInvalidUsage and says why (ncclGetLastError);
//   * MSCCL_DEBUG=INFO: one line per call on stderr, the plan used or why it fell back;
//   * MSCCL_BACKEND=cpu (test mode): buffers are host memory and plans run on the CPU backend;
//     default cuda (device memory, the call's stream).
// Errors never escape as exceptions: every failure becomes an ncclResult_t and a last-error
// string.
//
//===------------------------------------------------------------------------------------===//
#include <nccl.h>

#include "Shim.h"
#include "msccl/msccl.hpp"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Communicator.h"

#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#define MSCCL_EXPORT extern "C" __attribute__((visibility("default")))

namespace msccl::nccl::shim {

// --- The real NCCL ------------------------------------------------------------------------

std::once_flag gRealOnce;
void *gReal = nullptr;
std::string gRealWhy; // why it is not loaded

void *realHandle() {
  std::call_once(gRealOnce, [] {
    const char *p = std::getenv("MSCCL_NCCL_LIB_PATH");
    std::string path = p && *p ? p : "libnccl.so.2";
    gReal = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (!gReal) {
      const char *e = dlerror();
      gRealWhy = "the real NCCL could not be loaded from " + path + " (MSCCL_NCCL_LIB_PATH): " + (e ? e : "?");
    }
  });
  return gReal;
}

void *realSymbol(const char *name) {
  void *h = realHandle();
  return h ? dlsym(h, name) : nullptr;
}

// --- Our communicator ---------------------------------------------------------------------

enum class Backend { Cpu, Cuda };

// The id: our bootstrap's 128 bytes cannot hold NCCL's too, so ncclGetUniqueId registers the
// real id under ours and rank 0 hands it to the others over our communicator at init.

std::mutex gMu;
std::shared_ptr<msccl::PlanRegistry> gRegistry;
std::string gRegistryError;
bool gRegistryLoaded = false;
thread_local std::string tLastError;

bool infoLogging() {
  static const bool on = [] {
    const char *d = std::getenv("MSCCL_DEBUG");
    return d && (std::strcmp(d, "INFO") == 0 || std::strcmp(d, "info") == 0 || std::strcmp(d, "TRACE") == 0);
  }();
  return on;
}

void logLine(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void logLine(const char *fmt, ...) {
  char buf[4096];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "MSCCL INFO %s\n", buf);
}

ncclResult_t failWith(Comm *c, ncclResult_t rc, const std::string &msg) {
  tLastError = "msccl: " + msg;
  if (c)
    c->lastError = tLastError;
  std::fprintf(stderr, "MSCCL WARN %s\n", msg.c_str());
  return rc;
}

Comm *ours(ncclComm_t comm) {
  auto *c = reinterpret_cast<Comm *>(comm);
  return c && c->magic == kCommMagic ? c : nullptr;
}

void attachPlans(Comm &c, bool hostBuffers) {
  c.mailbox = msccl::nccl::Mailbox::create(*c.comm->runtimeCommunicator()); // null above kMaxMailboxRanks
  c.hostBuffers = hostBuffers;
  if (hostBuffers || c.comm->backend() == msccl::Backend::Cuda)
    c.executor = std::make_unique<msccl::Executor>(c.comm);
  else
    c.noPlansWhy = "the CUDA backend with one process per rank is not in this build of libmsccl "
                   "(MSCCL_BACKEND=cpu runs plans on host buffers)";
}

msccl::Backend communicatorBackend(Backend backend) {
  // Bootstrap and exchanges run on the host either way; plans run on CUDA where this build can.
  return backend == Backend::Cuda && msccl::Communicator::supportsOneProcessPerRank(msccl::Backend::Cuda)
             ? msccl::Backend::Cuda
             : msccl::Backend::Cpu;
}

ncclComm_t realOf(ncclComm_t comm) {
  Comm *c = ours(comm);
  return c ? c->real : comm;
}

Backend backendFromEnv(std::string &error) {
  const char *b = std::getenv("MSCCL_BACKEND");
  if (!b || !*b || std::strcmp(b, "cuda") == 0)
    return Backend::Cuda;
  if (std::strcmp(b, "cpu") == 0)
    return Backend::Cpu;
  error = std::string("MSCCL_BACKEND='") + b + "' is neither cpu nor cuda";
  return Backend::Cuda;
}

/// The process's registry, filled once from MSCCL_PLANS.
std::shared_ptr<msccl::PlanRegistry> registry(std::string &error) {
  std::lock_guard<std::mutex> lock(gMu);
  if (!gRegistryLoaded) {
    gRegistryLoaded = true;
    gRegistry = std::make_shared<msccl::PlanRegistry>();
    const char *env = std::getenv("MSCCL_PLANS");
    std::string installed;
    if (!(env && *env)) { // the tuned defaults of this machine (msccl-tune --install), when there are some
      installed = msccl::installedPlansDir();
      if (!installed.empty() && ::access((installed + "/msccl-plans.json").c_str(), R_OK) != 0)
        installed.clear();
    }
    const char *dir = env && *env ? env : installed.empty() ? nullptr : installed.c_str();
    if (dir && *dir) {
      try {
        // .msccl programs compile (through the cache) with MSCCL_PLANS_DEFINES="NAME=VALUE,...".
        msccl::CompileParams params;
        if (const char *d = std::getenv("MSCCL_PLANS_DEFINES"); d && *d) {
          std::string all = d;
          for (size_t pos = 0; pos <= all.size();) {
            size_t comma = all.find(',', pos);
            std::string item = all.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
            size_t eq = item.find('=');
            if (eq == std::string::npos || eq == 0)
              throw std::runtime_error("MSCCL_PLANS_DEFINES: '" + item + "' is not NAME=VALUE");
            params.defines.emplace_back(item.substr(0, eq), item.substr(eq + 1));
            if (comma == std::string::npos)
              break;
            pos = comma + 1;
          }
        }
        size_t n = gRegistry->addDirectory(dir, params);
        if (infoLogging())
          logLine("%zu plan(s) registered from %s (%s)", n, dir,
                  installed.empty() ? "MSCCL_PLANS" : "installed by msccl-tune --install; MSCCL_PLANS is not set");
      } catch (const std::exception &e) {
        gRegistryError = (installed.empty() ? std::string("MSCCL_PLANS=") : std::string("installed plans ")) + dir +
                         ": " + e.what();
      }
    } else if (infoLogging()) {
      logLine("MSCCL_PLANS is not set and no plans are installed (msccl-tune --install): every call goes to NCCL");
    }
  }
  error = gRegistryError;
  return gRegistryError.empty() ? gRegistry : nullptr;
}

bool dataType(ncclDataType_t t, msccl::plan::DataType &out, size_t &bytes) {
  using msccl::plan::DataType;
  switch (t) {
  case ncclInt8: out = DataType::UInt8, bytes = 1; return true; // moved, not reduced (see redOp)
  case ncclUint8: out = DataType::UInt8, bytes = 1; return true;
  case ncclInt32: out = DataType::Int32, bytes = 4; return true;
  case ncclUint32: out = DataType::UInt32, bytes = 4; return true;
  case ncclFloat16: out = DataType::Float16, bytes = 2; return true;
  case ncclFloat32: out = DataType::Float32, bytes = 4; return true;
  case ncclBfloat16: out = DataType::BFloat16, bytes = 2; return true;
  default: return false;
  }
}

/// Bytes of one element of any NCCL type (0 for an unknown one).
size_t elementBytes(ncclDataType_t t) {
  static const size_t bytes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return unsigned(t) < sizeof bytes / sizeof *bytes ? bytes[t] : 0;
}

const char *typeName(ncclDataType_t t) {
  static const char *names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16",
                                "float32", "float64", "bfloat16", "float8e4m3", "float8e5m2"};
  return unsigned(t) < sizeof names / sizeof *names ? names[t] : "unknown-type";
}


/// One collective call, as the registry and the executor see it.
using Kind = msccl::runtime::CollectiveKind;

/// One collective call. Its NCCL name, registry name and whether it reduces come from the
/// collectives table (Collectives.def).
struct Call {
  msccl::runtime::CollectiveKind kind;
  const void *send;
  void *recv;
  size_t sendBytes, recvBytes, messageBytes;
  bool inPlace;
  ncclDataType_t type;
  ncclRedOp_t op;
  cudaStream_t stream;
  int root = 0; // ncclBroadcast / ncclReduce: the root-0 plan runs renamed (msccl::rootedPlan)
  const char *api() const { return msccl::runtime::ncclEntryPoint(kind).data(); } // "ncclAllReduce"
  std::string collective() const { return std::string(msccl::runtime::collectiveName(kind)); }
  bool reduces() const { return msccl::runtime::collectiveReduces(kind) == msccl::runtime::Reduces::Yes; }
};

/// `plan` for root `root` (itself for root 0), made once per communicator, plan and root: the
/// executor prepares each plan object once, so the renamed plan is kept.
const msccl::PlanPtr &rootedFor(Comm &c, const msccl::PlanPtr &plan, int root) {
  if (root == 0)
    return plan;
  std::lock_guard<std::mutex> lock(c.rootedMutex);
  msccl::PlanPtr &slot = c.rootedPlans[{plan.get(), root}];
  if (!slot)
    slot = msccl::rootedPlan(plan, uint32_t(root), uint32_t(c.ranksPerNode));
  return slot;
}

/// Run `call` with a plan; false (with `why`) when it must go to NCCL instead.
bool runPlanned(Comm &c, const Call &call, std::string &why, ncclResult_t &rc) {
  rc = ncclSuccess;
  if (!c.comm) {
    why = "this communicator was made by NCCL alone (ncclCommInitAll / split)";
    return false;
  }
  if (!c.executor) {
    why = c.noPlansWhy;
    return false;
  }
  msccl::plan::DataType dt;
  size_t es = 0;
  if (!dataType(call.type, dt, es)) {
    // A collective that only moves data moves bytes: int64, uint64, float64 and fp8 as bytes
    // (PyTorch all-gathers int64 sizes, broadcasts float64 buffers).
    if (call.reduces() || elementBytes(call.type) == 0) {
      why = std::string("element type ") + typeName(call.type) + " has no plan executor" +
            (call.reduces() ? " for reductions" : "");
      return false;
    }
    dt = msccl::plan::DataType::UInt8;
    es = 1;
  }
  if (call.reduces() && call.type == ncclInt8) {
    why = "int8 reductions have no plan executor";
    return false;
  }
  PlannedOp po;
  if (call.reduces() && !plannedOp(c, call.op, call.type, po, why))
    return false;
  const msccl::plan::ReduceOp ro = po.reduce;
  std::string regError;
  auto reg = registry(regError);
  if (!reg) {
    why = regError;
    return false;
  }
  msccl::SelectRequest req = c.comm->request(call.collective(), call.messageBytes, call.inPlace);
  const msccl::RegisteredPlan *plan = nullptr;
  try {
    plan = reg->select(req);
  } catch (const std::exception &e) {
    why = std::string("selection failed: ") + e.what();
    return false;
  }
  if (!plan) {
    why = "no plan: " + reg->explainLine(req);
    return false;
  }
  if (call.root < 0 || call.root >= c.size) {
    rc = failWith(&c, ncclInvalidArgument, std::string(call.api()) + ": root " + std::to_string(call.root) +
                                               " is not a rank of this communicator of " + std::to_string(c.size));
    return true;
  }
  const void *send = call.send;
  void *recv = call.recv;
  if (call.kind == Kind::Reduce && c.rank != call.root) {
    // NCCL's recvbuff is the root's alone (null elsewhere is fine) and a non-root rank's buffer
    // stays as it was: the plan's output there goes to a buffer of ours (host memory, which the
    // CUDA backend copies to as well). In place, the input is copied there first.
    if (c.reduceSink.size() < call.recvBytes)
      c.reduceSink.resize(call.recvBytes);
    recv = c.reduceSink.data();
    if (call.inPlace) {
      c.executor->copy(recv, call.send, call.sendBytes, reinterpret_cast<void *>(call.stream));
      send = recv;
    }
  }
  try {
    const msccl::PlanPtr &toRun = rootedFor(c, plan->plan, call.root);
    c.executor->execute(c.rank, send, recv, call.sendBytes, call.recvBytes, dt, ro, toRun,
                        reinterpret_cast<void *>(call.stream));
    if (po.after != PlannedOp::After::Nothing && (call.kind != Kind::Reduce || c.rank == call.root)) {
      if (c.hostBuffers) {
        applyAfter(po, call.recv, call.recvBytes / es, dt, c.size);
      } else { // device memory: scaled in a host copy, once the call's stream has run the plan
        std::vector<uint8_t> host(call.recvBytes);
        c.executor->copy(host.data(), call.recv, call.recvBytes, reinterpret_cast<void *>(call.stream));
        applyAfter(po, host.data(), call.recvBytes / es, dt, c.size);
        c.executor->copy(call.recv, host.data(), call.recvBytes);
      }
    }
  } catch (const msccl::Error &e) {
    // A size the plan's chunking cannot split, or a backend this build lacks: every rank finds
    // the same before running anything, so the call can still go to NCCL.
    if (e.code() == msccl::ErrorCode::Unsupported || e.code() == msccl::ErrorCode::InvalidSize) {
      why = std::string("plan ") + plan->info.name + " cannot run this call: " + e.what();
      return false;
    }
    rc = failWith(&c, e.code() == msccl::ErrorCode::InvalidArgument ? ncclInvalidArgument : ncclInternalError,
                  std::string(call.api()) + " with plan " + plan->info.name + ": " + e.what());
    // A plan that timed out or failed while running (not a bad argument) is the communicator's
    // asynchronous error, as PyTorch's watchdog polls it with ncclCommGetAsyncError.
    if (e.code() != msccl::ErrorCode::InvalidArgument)
      c.asyncError = rc;
    return true;
  } catch (const std::exception &e) {
    rc = c.asyncError =
        failWith(&c, ncclInternalError, std::string(call.api()) + " with plan " + plan->info.name + ": " + e.what());
    return true;
  }
  if (infoLogging())
    logLine("rank %d: %s %zu bytes %s%s: plan %s (%s)", c.rank, call.api(), call.messageBytes, typeName(call.type),
            call.inPlace ? " in-place" : "", plan->info.name.c_str(), plan->info.source.c_str());
  return true;
}

/// Log and report a call that goes to NCCL; an error when there is no NCCL to go to.
ncclResult_t noRealNccl(Comm *c, const char *api, const std::string &why) {
  realHandle();
  const std::string real = c && !c->realWhy.empty() ? c->realWhy
                           : gRealWhy.empty()        ? "the NCCL communicator was not created"
                                                     : gRealWhy;
  return failWith(c, ncclInvalidUsage, std::string(api) + ": no plan and no NCCL to fall back to (" + why + "; " + real + ")");
}

void logFallback(Comm *c, const char *api, size_t bytes, const std::string &why) {
  if (infoLogging())
    logLine("rank %d: %s %zu bytes: NCCL (%s)", c ? c->rank : -1, api, bytes, why.c_str());
}

} // namespace msccl::nccl::shim

using namespace msccl::nccl::shim;

// --- Version, ids, communicators ----------------------------------------------------------

MSCCL_EXPORT ncclResult_t ncclGetVersion(int *version) {
  if (!version)
    return failWith(nullptr, ncclInvalidArgument, "ncclGetVersion: version is null");
  if (auto f = realFn<ncclResult_t (*)(int *)>("ncclGetVersion"))
    return f(version);
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

namespace {
// Real NCCL ids made by ncclGetUniqueId in this process, by our id's bytes.
std::mutex gIdsMu;
std::vector<std::pair<std::string, ncclUniqueId>> gRealIds;
} // namespace

MSCCL_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId) {
  if (!uniqueId)
    return failWith(nullptr, ncclInvalidArgument, "ncclGetUniqueId: uniqueId is null");
  static_assert(sizeof(ncclUniqueId) == sizeof(msccl::UniqueId), "ids are both 128 bytes");
  msccl::UniqueId id;
  try {
    id = msccl::Communicator::getUniqueId();
  } catch (const std::exception &e) {
    return failWith(nullptr, ncclSystemError, std::string("ncclGetUniqueId: ") + e.what());
  }
  if (auto f = realFn<ncclResult_t (*)(ncclUniqueId *)>("ncclGetUniqueId")) {
    ncclUniqueId realId;
    if (f(&realId) == ncclSuccess) {
      std::lock_guard<std::mutex> lock(gIdsMu);
      gRealIds.emplace_back(std::string(id.internal, sizeof id.internal), realId);
    }
  }
  std::memcpy(uniqueId->internal, id.internal, sizeof id.internal);
  return ncclSuccess;
}

namespace {
ncclResult_t initRank(ncclComm_t *out, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config) {
  if (!out)
    return failWith(nullptr, ncclInvalidArgument, "ncclCommInitRank: comm is null");
  if (nranks <= 0 || rank < 0 || rank >= nranks)
    return failWith(nullptr, ncclInvalidArgument,
                    "ncclCommInitRank: rank " + std::to_string(rank) + " of " + std::to_string(nranks) + " is out of range");
  std::string error;
  const Backend backend = backendFromEnv(error);
  if (!error.empty())
    return failWith(nullptr, ncclInvalidUsage, "ncclCommInitRank: " + error);
  auto c = std::make_unique<Comm>();
  c->rank = rank;
  c->size = nranks;
  try {
    msccl::UniqueId id;
    std::memcpy(id.internal, commId.internal, sizeof id.internal);
    c->comm = msccl::Communicator::initRank(id, uint32_t(nranks), uint32_t(rank), communicatorBackend(backend));
    msccl::runtime::Communicator *rt = c->comm->runtimeCommunicator();
    c->ranksPerNode = int(c->comm->ranksPerNode());
    // The real NCCL's id travels from rank 0 over our communicator (every rank takes part,
    // whether or not the real NCCL loaded here).
    struct RealId {
      uint64_t have;
      ncclUniqueId id;
    } mine{};
    if (rank == 0) {
      std::lock_guard<std::mutex> lock(gIdsMu);
      for (auto &[ours, real] : gRealIds)
        if (ours == std::string(commId.internal, sizeof commId.internal)) {
          mine.have = 1;
          mine.id = real;
        }
    }
    auto all = rt->allGather(&mine, sizeof mine);
    RealId root;
    std::memcpy(&root, all[0].data(), sizeof root);
    attachPlans(*c, backend == Backend::Cpu);
    initReal(*c, root.have ? &root.id : nullptr, config); // collective: root.have is rank 0's
  } catch (const std::exception &e) {
    return failWith(nullptr, ncclSystemError, std::string("ncclCommInitRank: ") + e.what());
  }
  registry(error); // fill the registry now, so a bad MSCCL_PLANS shows at init
  if (!error.empty())
    return failWith(nullptr, ncclInvalidUsage, "ncclCommInitRank: " + error);
  if (infoLogging())
    logLine("rank %d of %d: communicator ready (%s backend%s, %d ranks per node, NCCL fallback %s)", rank, nranks,
            backend == Backend::Cpu ? "cpu" : "cuda", c->executor ? ", plans run" : ", every call to NCCL", c->ranksPerNode,
            c->real ? "ready" : "unavailable");
  *out = reinterpret_cast<ncclComm_t>(c.release());
  return ncclSuccess;
}
} // namespace

MSCCL_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank) {
  return initRank(comm, nranks, commId, rank, nullptr);
}

MSCCL_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                                 ncclConfig_t *config) {
  return initRank(comm, nranks, commId, rank, config);
}

/// One process driving several devices: NCCL's own communicators, wrapped (no plans: our
/// executor runs one rank per process).
MSCCL_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
  auto f = realFn<ncclResult_t (*)(ncclComm_t *, int, const int *)>("ncclCommInitAll");
  if (!f)
    return noRealNccl(nullptr, "ncclCommInitAll", "plans need one process per rank");
  if (!comms || ndev <= 0)
    return f(comms, ndev, devlist);
  std::vector<ncclComm_t> real(size_t(ndev), nullptr);
  ncclResult_t rc = f(real.data(), ndev, devlist);
  if (rc != ncclSuccess)
    return rc;
  for (int i = 0; i < ndev; ++i) {
    auto *c = new Comm;
    c->real = real[size_t(i)];
    c->rank = i;
    c->size = ndev;
    comms[i] = reinterpret_cast<ncclComm_t>(c);
  }
  return ncclSuccess;
}

namespace {
ncclResult_t endComm(ncclComm_t comm, const char *name) {
  Comm *c = ours(comm);
  if (!c)
    return failWith(nullptr, ncclInvalidArgument, std::string(name) + ": not a communicator");
  ncclResult_t rc = ncclSuccess;
  if (c->real)
    if (auto f = realFn<ncclResult_t (*)(ncclComm_t)>(name))
      rc = f(c->real);
  c->magic = 0;
  try {
    delete c; // our communicator's close is collective (every rank destroys its own)
  } catch (...) {
  }
  return rc;
}
} // namespace

MSCCL_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) { return endComm(comm, "ncclCommDestroy"); }
/// PyTorch's watchdog aborts a communicator whose call is stuck: the plan in progress in another
/// thread stops (Executor::abort: its call returns an error), the real NCCL's communicator is
/// aborted, and ours is left allocated (its teardown is collective, and an aborted job's peers
/// may never come), unusable from here on.
MSCCL_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  Comm *c = ours(comm);
  if (!c)
    return failWith(nullptr, ncclInvalidArgument, "ncclCommAbort: not a communicator");
  if (c->executor)
    c->executor->abort();
  ncclResult_t rc = ncclSuccess;
  if (c->real)
    if (auto f = realFn<ncclResult_t (*)(ncclComm_t)>("ncclCommAbort"))
      rc = f(c->real);
  c->magic = 0;
  if (infoLogging())
    logLine("rank %d: ncclCommAbort: plans stopped, communicator left allocated", c->rank);
  return rc;
}

MSCCL_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  Comm *c = ours(comm);
  if (!c)
    return failWith(nullptr, ncclInvalidArgument, "ncclCommFinalize: not a communicator");
  if (c->real)
    if (auto f = realFn<ncclResult_t (*)(ncclComm_t)>("ncclCommFinalize"))
      return f(c->real);
  return ncclSuccess;
}

MSCCL_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int *count) {
  Comm *c = ours(comm);
  if (!c || !count)
    return failWith(c, ncclInvalidArgument, "ncclCommCount: null communicator or count");
  *count = c->size;
  return ncclSuccess;
}

MSCCL_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank) {
  Comm *c = ours(comm);
  if (!c || !rank)
    return failWith(c, ncclInvalidArgument, "ncclCommUserRank: null communicator or rank");
  *rank = c->rank;
  return ncclSuccess;
}

MSCCL_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device) {
  Comm *c = ours(comm);
  if (!c || !device)
    return failWith(c, ncclInvalidArgument, "ncclCommCuDevice: null communicator or device");
  if (c->real)
    if (auto f = realFn<ncclResult_t (*)(ncclComm_t, int *)>("ncclCommCuDevice"))
      return f(c->real, device);
  *device = c->device;
  return ncclSuccess;
}

MSCCL_EXPORT const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess: return "no error";
  case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
  case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
  case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
  case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
  case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
  case ncclRemoteError: return "remote process exited or there was a network error";
  case ncclInProgress: return "NCCL operation in progress";
  default: return "unknown result code";
  }
}

MSCCL_EXPORT const char *ncclGetLastError(ncclComm_t comm) {
  if (Comm *c = ours(comm); c && !c->lastError.empty())
    return c->lastError.c_str();
  if (!tLastError.empty())
    return tLastError.c_str();
  if (auto f = realFn<const char *(*)(ncclComm_t)>("ncclGetLastError"))
    return f(realOf(comm));
  return "";
}

// --- Collectives --------------------------------------------------------------------------

namespace {
/// Run with a plan, else forward `forward(realComm)` to the real NCCL.
template <class F> ncclResult_t dispatch(ncclComm_t comm, const Call &call, F forward) {
  Comm *c = ours(comm);
  if (!c)
    return failWith(nullptr, ncclInvalidArgument, std::string(call.api()) + ": not a communicator");
  if (call.messageBytes == 0) { // count 0: nothing to do on any rank (NCCL returns at once too)
    if (infoLogging())
      logLine("rank %d: %s 0 bytes: nothing to do", c->rank, call.api());
    return ncclSuccess;
  }
  std::string why;
  ncclResult_t rc;
  if (runPlanned(*c, call, why, rc))
    return rc;
  if (!c->real)
    return noRealNccl(c, call.api(), why);
  logFallback(c, call.api(), call.messageBytes, why);
  return forward(c->real);
}

template <class Sig> Sig real(const char *name) { return realFn<Sig>(name); }

} // namespace

MSCCL_EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                        ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  const size_t es = elementBytes(datatype);
  size_t bytes = count * es;
  Call call{Kind::AllReduce, sendbuff, recvbuff, bytes, bytes, bytes, sendbuff == recvbuff, datatype, op, stream};
  return nowOrAtGroupEnd("ncclAllReduce", [=] {
    return dispatch(comm, call, [=](ncclComm_t r) {
      return real<decltype(&ncclAllReduce)>("ncclAllReduce")(sendbuff, recvbuff, count, datatype, realOp(op), r, stream);
    });
  });
}

MSCCL_EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                                        ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  Comm *c = ours(comm);
  const size_t es = elementBytes(datatype);
  size_t n = c ? size_t(c->size) : 1, rank = c ? size_t(c->rank) : 0, in = sendcount * es;
  bool inPlace = static_cast<const char *>(sendbuff) == static_cast<const char *>(recvbuff) + rank * in;
  Call call{Kind::AllGather, sendbuff, recvbuff, in, in * n, in * n, inPlace, datatype, ncclSum, stream};
  return nowOrAtGroupEnd("ncclAllGather", [=] {
    return dispatch(comm, call, [=](ncclComm_t r) {
      return real<decltype(&ncclAllGather)>("ncclAllGather")(sendbuff, recvbuff, sendcount, datatype, r, stream);
    });
  });
}

MSCCL_EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                            cudaStream_t stream) {
  Comm *c = ours(comm);
  const size_t es = elementBytes(datatype);
  size_t n = c ? size_t(c->size) : 1, rank = c ? size_t(c->rank) : 0, out = recvcount * es;
  bool inPlace = static_cast<const char *>(recvbuff) == static_cast<const char *>(sendbuff) + rank * out;
  Call call{Kind::ReduceScatter, sendbuff, recvbuff, out * n, out, out * n, inPlace, datatype, op, stream};
  return nowOrAtGroupEnd("ncclReduceScatter", [=] {
    return dispatch(comm, call, [=](ncclComm_t r) {
      return real<decltype(&ncclReduceScatter)>("ncclReduceScatter")(sendbuff, recvbuff, recvcount, datatype, realOp(op), r,
                                                                      stream);
    });
  });
}

MSCCL_EXPORT ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                       ncclComm_t comm, cudaStream_t stream) {
  Comm *c = ours(comm);
  const size_t es = elementBytes(datatype);
  size_t bytes = count * es * (c ? size_t(c->size) : 1);
  Call call{Kind::AllToAll, sendbuff, recvbuff, bytes, bytes, bytes, sendbuff == recvbuff, datatype, ncclSum, stream};
  return nowOrAtGroupEnd("ncclAlltoAll", [=] {
    return dispatch(comm, call, [=](ncclComm_t r) {
      return real<decltype(&ncclAlltoAll)>("ncclAlltoAll")(sendbuff, recvbuff, count, datatype, r, stream);
    });
  });
}

MSCCL_EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                        int root, ncclComm_t comm, cudaStream_t stream) {
  const size_t es = elementBytes(datatype);
  size_t bytes = count * es;
  Call call{Kind::Broadcast, sendbuff, recvbuff, bytes, bytes, bytes, sendbuff == recvbuff, datatype, ncclSum, stream,
            root};
  return nowOrAtGroupEnd("ncclBroadcast", [=] {
    return dispatch(comm, call, [=](ncclComm_t r) {
      return real<decltype(&ncclBroadcast)>("ncclBroadcast")(sendbuff, recvbuff, count, datatype, root, r, stream);
    });
  });
}

MSCCL_EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                    cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

MSCCL_EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  const size_t es = elementBytes(datatype);
  size_t bytes = count * es;
  Call call{Kind::Reduce, sendbuff, recvbuff, bytes, bytes, bytes, sendbuff == recvbuff, datatype, op, stream, root};
  return nowOrAtGroupEnd("ncclReduce", [=] {
    return dispatch(comm, call, [=](ncclComm_t r) {
      return real<decltype(&ncclReduce)>("ncclReduce")(sendbuff, recvbuff, count, datatype, realOp(op), root, r, stream);
    });
  });
}

// --- Forwarded as they are (our communicator unwrapped) -------------------------------------

namespace {
template <class F, class... A> ncclResult_t forward(const char *name, Comm *c, A... args) {
  auto f = realFn<F>(name);
  if (!f)
    return noRealNccl(c, name, "not planned");
  if (c && !c->real)
    return noRealNccl(c, name, "not planned");
  if (infoLogging()) {
    if (c)
      logLine("rank %d: %s: NCCL (not planned)", c->rank, name);
    else
      logLine("%s: NCCL (not planned)", name);
  }
  return f(args...);
}
} // namespace

namespace {
/// What Group.cpp needs to see a grouped send/recv set (PointToPoint.h).
Deferred p2pCall(ncclComm_t comm, bool isSend, const void *buffer, size_t count, ncclDataType_t type, int peer,
                 cudaStream_t stream) {
  Deferred d;
  Comm *c = ours(comm);
  if (c && c->comm)
    d.p2pComm = c;
  d.p2p = msccl::nccl::P2pCall{isSend, buffer, count, int(type), elementBytes(type), peer};
  d.stream = stream;
  return d;
}
} // namespace

MSCCL_EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                   ncclComm_t comm, cudaStream_t stream) {
  return nowOrAtGroupEnd(
      "ncclSend",
      [=] {
        return forward<decltype(&ncclSend)>("ncclSend", ours(comm), sendbuff, count, datatype, peer, realOf(comm),
                                            stream);
      },
      p2pCall(comm, true, sendbuff, count, datatype, peer, stream));
}
MSCCL_EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                   cudaStream_t stream) {
  return nowOrAtGroupEnd(
      "ncclRecv",
      [=] {
        return forward<decltype(&ncclRecv)>("ncclRecv", ours(comm), recvbuff, count, datatype, peer, realOf(comm),
                                            stream);
      },
      p2pCall(comm, false, recvbuff, count, datatype, peer, stream));
}
MSCCL_EXPORT ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
  return forward<decltype(&ncclGather)>("ncclGather", ours(comm), sendbuff, recvbuff, count, datatype, root,
                                        realOf(comm), stream);
}
MSCCL_EXPORT ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                      int root, ncclComm_t comm, cudaStream_t stream) {
  return forward<decltype(&ncclScatter)>("ncclScatter", ours(comm), sendbuff, recvbuff, count, datatype, root,
                                         realOf(comm), stream);
}
MSCCL_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *simInfo) {
  return forward<decltype(&ncclGroupSimulateEnd)>("ncclGroupSimulateEnd", nullptr, simInfo);
}
MSCCL_EXPORT ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
  return forward<decltype(&ncclMemAlloc)>("ncclMemAlloc", nullptr, ptr, size);
}
MSCCL_EXPORT ncclResult_t ncclMemFree(void *ptr) { return forward<decltype(&ncclMemFree)>("ncclMemFree", nullptr, ptr); }
MSCCL_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  Comm *c = ours(comm);
  if (c && asyncError && c->executor && c->asyncError == ncclSuccess) {
    // A planned call on a GPU returns once queued on its stream: ask whether one has since failed
    // (a device-side wait that timed out, an abort). Called from PyTorch's watchdog thread, so
    // the message goes to stderr and this thread's ncclGetLastError, not to c->lastError.
    try {
      c->executor->pollError();
    } catch (const std::exception &e) {
      c->asyncError = failWith(nullptr, ncclInternalError,
                               "rank " + std::to_string(c->rank) + ": a planned call failed after it returned: " +
                                   e.what());
    }
  }
  if (c && asyncError && (c->asyncError != ncclSuccess || !c->real)) {
    *asyncError = c->asyncError; // a planned call that failed; else nothing of ours is pending
    return ncclSuccess;
  }
  return forward<decltype(&ncclCommGetAsyncError)>("ncclCommGetAsyncError", c, realOf(comm), asyncError);
}
MSCCL_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle) {
  return forward<decltype(&ncclCommRegister)>("ncclCommRegister", ours(comm), realOf(comm), buff, size, handle);
}
MSCCL_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle) {
  return forward<decltype(&ncclCommDeregister)>("ncclCommDeregister", ours(comm), realOf(comm), handle);
}
MSCCL_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
                                                 int winFlags) {
  return forward<decltype(&ncclCommWindowRegister)>("ncclCommWindowRegister", ours(comm), realOf(comm), buff, size,
                                                    win, winFlags);
}
MSCCL_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return forward<decltype(&ncclCommWindowDeregister)>("ncclCommWindowDeregister", ours(comm), realOf(comm), win);
}
MSCCL_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) {
  return forward<decltype(&ncclCommRevoke)>("ncclCommRevoke", ours(comm), realOf(comm), revokeFlags);
}

namespace msccl::nccl::shim {
/// A communicator NCCL made from one of ours (split, shrink): NCCL's alone, wrapped.
ncclResult_t wrapNew(ncclResult_t rc, ncclComm_t *newcomm) {
  if (rc != ncclSuccess || !newcomm || !*newcomm)
    return rc;
  auto *c = new Comm;
  c->real = *newcomm;
  if (auto f = realFn<ncclResult_t (*)(ncclComm_t, int *)>("ncclCommCount"))
    f(c->real, &c->size);
  if (auto f = realFn<ncclResult_t (*)(ncclComm_t, int *)>("ncclCommUserRank"))
    f(c->real, &c->rank);
  *newcomm = reinterpret_cast<ncclComm_t>(c);
  return rc;
}
} // namespace msccl::nccl::shim

MSCCL_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                         ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags) {
  return wrapNew(forward<decltype(&ncclCommShrink)>("ncclCommShrink", ours(comm), realOf(comm), excludeRanksList,
                                                    excludeRanksCount, newcomm, config, shrinkFlags),
                 newcomm);
}
MSCCL_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
                                                   ncclUniqueId *commIds, ncclConfig_t *config) {
  // Several ids (NCCL's scalable init): NCCL's alone.
  return wrapNew(forward<decltype(&ncclCommInitRankScalable)>("ncclCommInitRankScalable", nullptr, newcomm, nranks,
                                                              myrank, nId, commIds, config),
                 newcomm);
}
