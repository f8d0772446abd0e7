//===- Execute.cpp - Communicator and Executor::execute on one rank's buffers ------------===//
//
// Consumes one rank's send/recv buffers, sizes, element type, reduction and a plan; runs the
// plan through the runtime's executors, never a second implementation of an op:
//   * local communicator (every rank a thread of this process): each rank's call deposits its
//     buffers in a rendezvous; the last rank to arrive runs the backend's all-ranks executor
//     (runtime::createExecutor("cpu" | "cuda"), Executor.h) once for all of them and releases
//     the others with the outcome (the same error on every rank);
//   * one process per rank (unique id or MPI): a runtime::RankSession of the communicator's
//     backend (DistributedRun.h: the CPU's DistributedSession, CUDA's CudaRankSession), cached
//     per (plan, size, in-place, type, op) so a repeated call pays for its launch only; the
//     rank's input is copied into the session's shared buffer and the output back.
// Both check that the sizes are the plan's S_in/S_out for one nccl-tests size S (Collective.h).
//
//===------------------------------------------------------------------------------------===//
#include "Internal.h"

#include "msccl/plan/PlanJson.h"
#include "msccl/runtime/Collective.h"
#include "msccl/runtime/Executor.h"
#include "msccl/runtime/Communicator.h"
#include "msccl/runtime/Counts.h"
#include "msccl/runtime/DistributedRun.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <cstdlib>
#include <dlfcn.h>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <sstream>
#include <tuple>

namespace msccl {
namespace detail {

ErrorCode currentError(std::string &message) {
  try {
    throw;
  } catch (const Error &e) {
    message = e.what();
    return e.code();
  } catch (const runtime::ExecutionError &e) {
    message = e.what();
    switch (e.kind()) {
    case runtime::ErrorKind::InvalidPlan: return ErrorCode::InvalidPlan;
    case runtime::ErrorKind::InvalidSize: return ErrorCode::InvalidSize;
    case runtime::ErrorKind::Deadlock: return ErrorCode::Deadlock;
    case runtime::ErrorKind::Misuse: return ErrorCode::Misuse;
    case runtime::ErrorKind::Unsupported: return ErrorCode::Unsupported;
    case runtime::ErrorKind::Backend: return ErrorCode::Backend;
    }
    return ErrorCode::Internal;
  } catch (const plan::PlanError &e) {
    message = e.what();
    return ErrorCode::InvalidPlan;
  } catch (const std::bad_alloc &) {
    message = "out of memory";
    return ErrorCode::Backend;
  } catch (const std::exception &e) {
    message = e.what();
    return ErrorCode::Internal;
  } catch (...) {
    message = "unknown exception";
    return ErrorCode::Internal;
  }
}

void rethrowAsError(const std::string &context) {
  std::string message;
  ErrorCode code = currentError(message);
  throw Error(code, context.empty() ? message : context + ": " + message);
}

} // namespace detail

const char *errorCodeName(ErrorCode code) {
  switch (code) {
  case ErrorCode::Ok: return "ok";
  case ErrorCode::InvalidArgument: return "invalid argument";
  case ErrorCode::CompileError: return "compile error";
  case ErrorCode::NoPlan: return "no plan";
  case ErrorCode::InvalidPlan: return "invalid plan";
  case ErrorCode::InvalidSize: return "invalid size";
  case ErrorCode::Deadlock: return "deadlock";
  case ErrorCode::Misuse: return "misuse";
  case ErrorCode::Unsupported: return "unsupported";
  case ErrorCode::Backend: return "backend error";
  case ErrorCode::System: return "system error";
  case ErrorCode::Internal: return "internal error";
  }
  return "unknown error";
}

const char *backendName(Backend b) { return b == Backend::Cuda ? "cuda" : "cpu"; }

// --- Communicator ----------------------------------------------------------------------------

struct Communicator::Impl {
  uint32_t worldSize = 0;
  uint32_t ranksPerNode = 0;
  Backend backend = Backend::Cpu;
  std::unique_ptr<runtime::Communicator> rt; ///< null for a local communicator
};

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

std::shared_ptr<Communicator> Communicator::local(uint32_t worldSize, uint32_t ranksPerNode, Backend backend) {
  if (worldSize == 0)
    throw Error(ErrorCode::InvalidArgument, "Communicator::local: the world size must be positive");
  if (ranksPerNode == 0)
    ranksPerNode = worldSize;
  if (worldSize % ranksPerNode != 0)
    throw Error(ErrorCode::InvalidArgument, "Communicator::local: " + std::to_string(ranksPerNode) +
                                                " ranks per node does not divide the world size " +
                                                std::to_string(worldSize));
  runtime::registerBuiltExecutors();
  if (backend == Backend::Cuda && !runtime::hasExecutor("cuda"))
    throw Error(ErrorCode::Unsupported, "this libmsccl was built without the CUDA executor");
  auto impl = std::make_unique<Impl>();
  impl->worldSize = worldSize;
  impl->ranksPerNode = ranksPerNode;
  impl->backend = backend;
  return std::shared_ptr<Communicator>(new Communicator(std::move(impl)));
}

std::shared_ptr<Communicator> Communicator::adopt(std::unique_ptr<runtime::Communicator> comm, Backend backend) {
  if (!comm)
    throw Error(ErrorCode::InvalidArgument, "Communicator::adopt: null communicator");
  if (!supportsOneProcessPerRank(backend))
    throw Error(ErrorCode::Unsupported, std::string("this libmsccl has no one-process-per-rank backend \"") +
                                            backendName(backend) + "\" (built without the CUDA executor)");
  auto impl = std::make_unique<Impl>();
  impl->worldSize = uint32_t(comm->size());
  impl->ranksPerNode = uint32_t(comm->nodeRanks().size());
  impl->backend = backend;
  impl->rt = std::move(comm);
  return std::shared_ptr<Communicator>(new Communicator(std::move(impl)));
}

namespace {

/// The MPI bootstrap plugin's entry point (MpiBootstrap.cpp), loaded once: from
/// MSCCL_MPI_BOOTSTRAP_LIB when set, else beside libmsccl.so, else by name through the loader's
/// search path. RTLD_GLOBAL: OpenMPI's components resolve libmpi's symbols through it.
using InitWorldFn = int (*)(int *, char ***, void **, char *, size_t);

InitWorldFn mpiBootstrap() {
  if (!*MSCCL_MPI_BOOTSTRAP_PLUGIN) // CMake defines the plugin's file name, "" without MPI
    throw Error(ErrorCode::Unsupported, "Communicator::mpi: this libmsccl was built without MPI (use "
                                        "Communicator::getUniqueId/initRank for one process per rank)");
  static std::mutex mu;
  static InitWorldFn fn = nullptr;
  static std::string failure;
  std::lock_guard<std::mutex> lk(mu);
  if (fn)
    return fn;
  if (failure.empty()) {
    std::vector<std::string> candidates;
    if (const char *env = std::getenv("MSCCL_MPI_BOOTSTRAP_LIB"); env && *env)
      candidates.push_back(env);
    else {
      Dl_info info{};
      if (dladdr(reinterpret_cast<void *>(&mpiBootstrap), &info) && info.dli_fname) {
        std::string self = info.dli_fname;
        size_t slash = self.rfind('/');
        if (slash != std::string::npos)
          candidates.push_back(self.substr(0, slash + 1) + MSCCL_MPI_BOOTSTRAP_PLUGIN);
      }
      candidates.push_back(MSCCL_MPI_BOOTSTRAP_PLUGIN);
    }
    std::string tried;
    for (const std::string &c : candidates) {
      void *h = dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (!h) {
        const char *e = dlerror();
        tried += std::string(tried.empty() ? "" : "; ") + (e ? e : c);
        continue;
      }
      fn = reinterpret_cast<InitWorldFn>(dlsym(h, "msccl_bootstrap_mpi_init_world"));
      if (fn)
        return fn;
      tried += std::string(tried.empty() ? "" : "; ") + c + ": no msccl_bootstrap_mpi_init_world";
    }
    failure = "cannot load the MPI bootstrap " MSCCL_MPI_BOOTSTRAP_PLUGIN " (" + tried + ")";
  }
  throw Error(ErrorCode::Unsupported, "Communicator::mpi: " + failure);
}

} // namespace

std::shared_ptr<Communicator> Communicator::mpi(int *argc, char ***argv, Backend backend) {
  InitWorldFn initWorld = mpiBootstrap();
  void *raw = nullptr;
  char message[2048] = {};
  int rc = initWorld(argc, argv, &raw, message, sizeof message);
  if (rc != 0) {
    // 1 + ErrorKind: the plugin's ExecutionError, mapped to an ErrorCode as every other one.
    if (rc >= 1 && rc <= 1 + int(runtime::ErrorKind::Backend)) {
      try {
        throw runtime::ExecutionError(runtime::ErrorKind(rc - 1), message);
      } catch (...) {
        detail::rethrowAsError("Communicator::mpi");
      }
    }
    throw Error(ErrorCode::Internal, std::string("Communicator::mpi: ") + message);
  }
  return adopt(std::unique_ptr<runtime::Communicator>(static_cast<runtime::Communicator *>(raw)), backend);
}

bool Communicator::launchedByMpi() { return runtime::Communicator::launchedByMpi(); }

bool Communicator::supportsOneProcessPerRank(Backend backend) {
  runtime::registerBuiltRankBackends();
  const std::vector<std::string> names = runtime::registeredRankBackends();
  return std::find(names.begin(), names.end(), backendName(backend)) != names.end();
}

bool Communicator::haveUniqueIdBootstrap() { return runtime::Communicator::haveUniqueIdBootstrap(); }

// The unique-id bootstrap (runtime/Communicator.h: ZeroMQ rendezvous, POSIX shared memory).
UniqueId Communicator::getUniqueId() {
  try {
    runtime::UniqueId rid = runtime::Communicator::createUniqueId();
    UniqueId id;
    static_assert(sizeof id.internal == sizeof rid.bytes, "both ids are 128 bytes");
    std::memcpy(id.internal, rid.bytes, sizeof id.internal);
    return id;
  } catch (const Error &) {
    throw;
  } catch (...) {
    detail::rethrowAsError("Communicator::getUniqueId");
  }
}

std::shared_ptr<Communicator> Communicator::initRank(const UniqueId &id, uint32_t worldSize, uint32_t rank,
                                                     Backend backend) {
  std::unique_ptr<runtime::Communicator> rt;
  try {
    runtime::UniqueId rid;
    std::memcpy(rid.bytes, id.internal, sizeof rid.bytes);
    rt = runtime::Communicator::initFromUniqueId(rid, int(rank), int(worldSize));
  } catch (const Error &) {
    throw;
  } catch (...) {
    detail::rethrowAsError("Communicator::initRank");
  }
  return adopt(std::move(rt), backend);
}

std::shared_ptr<Communicator> Communicator::fromEnvironment(Backend backend) {
  std::unique_ptr<runtime::Communicator> rt;
  try {
    rt = runtime::Communicator::initFromEnvironment();
  } catch (const Error &) {
    throw;
  } catch (...) {
    detail::rethrowAsError("Communicator::fromEnvironment");
  }
  return adopt(std::move(rt), backend);
}

void Communicator::barrier() {
  if (!impl_->rt)
    throw Error(ErrorCode::InvalidArgument, "barrier: a local communicator has no processes to wait for");
  try {
    impl_->rt->barrier();
  } catch (...) {
    detail::rethrowAsError("Communicator::barrier");
  }
}

uint32_t Communicator::worldSize() const { return impl_->worldSize; }
uint32_t Communicator::ranksPerNode() const { return impl_->ranksPerNode; }
bool Communicator::isLocal() const { return !impl_->rt; }
int Communicator::rank() const {
  if (impl_->rt)
    return impl_->rt->rank();
  return -1;
}
Backend Communicator::backend() const { return impl_->backend; }
runtime::Communicator *Communicator::runtimeCommunicator() const { return impl_->rt.get(); }

SelectRequest Communicator::request(const std::string &collective, uint64_t messageBytes, bool inPlace) const {
  SelectRequest r;
  r.collective = collective;
  r.worldSize = impl_->worldSize;
  r.ranksPerNode = impl_->ranksPerNode;
  r.messageBytes = messageBytes;
  r.inPlace = inPlace;
  return r;
}

// --- Executor --------------------------------------------------------------------------------

namespace {

struct CallArgs {
  const void *send = nullptr;
  void *recv = nullptr;
  size_t sendBytes = 0, recvBytes = 0;
  plan::DataType dtype = plan::DataType::Float32;
  plan::ReduceOp redop = plan::ReduceOp::Sum;
  const plan::Plan *plan = nullptr;
  const std::vector<uint64_t> *counts = nullptr; ///< executeV: the n x n matrix (elements)
};

/// The call's matrix as a CountMatrix, checked against the plan's rank count and the buffers.
runtime::CountMatrix countMatrix(const plan::Plan &p, uint32_t rank, const CallArgs &a) {
  const uint32_t n = uint32_t(p.gpus.size());
  if (a.counts->size() != uint64_t(n) * n)
    throw Error(ErrorCode::InvalidArgument, "executeV: the plan has " + std::to_string(n) +
                                                " ranks, so counts must have " + std::to_string(uint64_t(n) * n) +
                                                " entries (n x n, row-major), not " + std::to_string(a.counts->size()));
  runtime::CountMatrix m;
  m.n = n;
  m.counts = *a.counts;
  const uint64_t e = plan::dataTypeBytes(a.dtype);
  uint64_t need = m.rowSum(rank) * e, needOut = m.colSum(rank) * e;
  if (a.sendBytes < need || a.recvBytes < needOut)
    throw Error(ErrorCode::InvalidArgument,
                "executeV: rank " + std::to_string(rank) + " sends " + std::to_string(need) + " and receives " +
                    std::to_string(needOut) + " bytes (row/column sums of counts x " + std::to_string(e) +
                    " bytes), but its buffers hold " + std::to_string(a.sendBytes) + " and " +
                    std::to_string(a.recvBytes) + " bytes");
  if ((need && !a.send) || (needOut && !a.recv))
    throw Error(ErrorCode::InvalidArgument, "executeV: null send or recv buffer");
  return m;
}

/// S_in/S_out of the plan for the call's sizes, or Error(InvalidArgument / InvalidSize).
runtime::MessageSizes checkSizes(const plan::Plan &p, size_t sendBytes, size_t recvBytes, plan::DataType dtype) {
  uint64_t S = std::max<uint64_t>(sendBytes, recvBytes);
  std::string why;
  std::optional<runtime::MessageSizes> ms = runtime::messageSizesFor(p, S, plan::dataTypeBytes(dtype), &why);
  if (!ms)
    throw Error(ErrorCode::InvalidSize, "the plan cannot run message size " + std::to_string(S) + " bytes: " + why);
  if (ms->inputBytes != sendBytes || ms->outputBytes != recvBytes)
    throw Error(ErrorCode::InvalidArgument,
                "for message size " + std::to_string(S) + " the " + p.collective + " plan sends " +
                    std::to_string(ms->inputBytes) + " and receives " + std::to_string(ms->outputBytes) +
                    " bytes per rank, but the call passes send_bytes " + std::to_string(sendBytes) +
                    " and recv_bytes " + std::to_string(recvBytes));
  return *ms;
}

/// The plan's ops may fix the reduction (`reduce_op`); a call asking for another one is refused
/// (as msccl-run refuses it), not silently run with the plan's.
void checkReduceOp(const plan::Plan &p, plan::ReduceOp redop) {
  bool conflict = false;
  std::optional<plan::ReduceOp> fixed = runtime::planReduceOp(p, &conflict);
  if (fixed && *fixed != redop)
    throw Error(ErrorCode::Unsupported, "the plan's reduce ops fix reduce_op `" +
                                            std::string(plan::reduceOpName(*fixed)) + "`; the call asks for `" +
                                            std::string(plan::reduceOpName(redop)) + "`");
}

/// In place by the nccl-tests conventions of the plan's collective (Executor.h RankBuffers).
bool isInPlace(const plan::Plan &p, uint32_t rank, const CallArgs &a) {
  const auto l = runtime::inPlaceLayout(runtime::collectiveKind(p.collective), rank, a.sendBytes, a.recvBytes);
  // send and recv are where the layout puts them in one buffer (compared as addresses).
  return reinterpret_cast<uintptr_t>(a.send) - l.input == reinterpret_cast<uintptr_t>(a.recv) - l.output;
}

/// An in-place-only plan (`"inplace": true`) writes its result through the input buffer: with
/// distinct buffers it would land in `send` and leave `recv` untouched. Refused, naming both.
void checkInPlace(const plan::Plan &p, uint32_t rank, const CallArgs &a) {
  if (!p.inplace || a.counts || isInPlace(p, rank, a))
    return;
  std::ostringstream os;
  os << "execute: the " << p.collective << " plan `" << p.name.value_or("(unnamed)") << "` runs in place only (\"inplace\": true), but rank "
     << rank << " passes distinct buffers (send " << a.send << ", recv " << a.recv << "); in place means "
     << runtime::inPlaceRule(runtime::collectiveKind(p.collective))
     << "; pass in-place buffers or use an out-of-place plan";
  throw Error(ErrorCode::InvalidArgument, os.str());
}

} // namespace

struct Executor::Impl {
  double timeout = 60;

  // Local communicator: the rendezvous.
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::optional<CallArgs>> slots;
  uint32_t arrived = 0;
  uint64_t generation = 0;
  ErrorCode roundCode = ErrorCode::Ok;
  std::string roundMessage;
  std::string missingRanks; ///< Ranks absent when the first rank of an abandoned round gave up.
  std::unique_ptr<runtime::Executor> backend;

  // AllToAllV: one CountsResolver per plan (built at its first executeV, reused afterwards).
  struct Resolver {
    PlanPtr plan; // keeps the symbolic plan alive
    std::unique_ptr<runtime::CountsResolver> resolver;
  };
  std::mutex resolverMu;
  std::map<const plan::Plan *, Resolver> resolvers;
  runtime::CountsResolver &resolverFor(const PlanPtr &p) {
    std::lock_guard<std::mutex> lk(resolverMu);
    Resolver &r = resolvers[p.get()];
    if (!r.resolver) {
      r.resolver = std::make_unique<runtime::CountsResolver>(*p);
      r.plan = p;
    }
    return *r.resolver;
  }
  PlanPtr currentPlan; ///< Local rounds: the PlanPtr of rank 0's call (for resolverFor).
  std::vector<std::vector<uint8_t>> stagingIn, stagingOut;

  struct Session {
    PlanPtr plan; // keeps the plan the session refers to alive
    std::tuple<const plan::Plan *, uint64_t, uint64_t, bool, plan::DataType, plan::ReduceOp> key;
    std::unique_ptr<runtime::RankSession> session;
  };
  std::list<Session> sessions; ///< Most recently used first; at most kMaxSessions.

  // Executor::abort: set from any thread; every live session's abort is called under the mutex.
  std::atomic<bool> aborted{false};
  std::mutex liveMu;
  std::vector<runtime::RankSession *> live;
  void track(runtime::RankSession *s, bool add) {
    std::lock_guard<std::mutex> lock(liveMu);
    if (add) {
      live.push_back(s);
      if (aborted.load())
        s->abort();
    } else {
      live.erase(std::remove(live.begin(), live.end(), s), live.end());
    }
  }
  void abortAll() {
    aborted.store(true);
    std::lock_guard<std::mutex> lock(liveMu);
    for (runtime::RankSession *s : live)
      s->abort();
  }
  static constexpr size_t kMaxSessions = 8;

  /// The last rank to arrive runs every rank's call.
  void runRound(Communicator &comm) {
    const CallArgs &a0 = *slots[0];
    for (uint32_t r = 1; r < slots.size(); ++r) {
      const CallArgs &a = *slots[r];
      if (a.plan != a0.plan && !(*a.plan == *a0.plan))
        throw Error(ErrorCode::InvalidArgument, "rank " + std::to_string(r) + " passes another plan than rank 0");
      if (bool(a.counts) != bool(a0.counts) || (a.counts && *a.counts != *a0.counts))
        throw Error(ErrorCode::InvalidArgument, "rank " + std::to_string(r) + " passes another count matrix than rank 0");
      if (!a0.counts && (a.sendBytes != a0.sendBytes || a.recvBytes != a0.recvBytes))
        throw Error(ErrorCode::InvalidArgument, "rank " + std::to_string(r) + " passes send/recv sizes " +
                                                    std::to_string(a.sendBytes) + "/" + std::to_string(a.recvBytes) +
                                                    " but rank 0 " + std::to_string(a0.sendBytes) + "/" +
                                                    std::to_string(a0.recvBytes));
      if (a.dtype != a0.dtype || a.redop != a0.redop)
        throw Error(ErrorCode::InvalidArgument,
                    "rank " + std::to_string(r) + " passes another data type or reduction than rank 0");
    }
    const plan::Plan &p = *a0.plan;
    if (p.gpus.size() != comm.worldSize())
      throw Error(ErrorCode::InvalidPlan, "the plan has " + std::to_string(p.gpus.size()) +
                                              " ranks but the communicator " + std::to_string(comm.worldSize()));
    if (a0.counts) {
      runRoundV(comm);
      return;
    }
    checkSizes(p, a0.sendBytes, a0.recvBytes, a0.dtype);
    checkReduceOp(p, a0.redop);
    if (!backend)
      backend = runtime::createExecutor(backendName(comm.backend()));
    runtime::ExecuteRequest req;
    req.plan = &p;
    req.inputBytes = a0.sendBytes;
    req.outputBytes = a0.recvBytes;
    req.dataType = a0.dtype;
    req.reduceOp = a0.redop;
    for (auto &s : slots)
      req.buffers.push_back({const_cast<void *>(s->send), s->recv});
    backend->execute(req);
  }

  /// AllToAllV on a local communicator: resolve once for all ranks, run the concrete plan on
  /// staging buffers of S_in / S_out bytes (every rank's buffers have one size in a request),
  /// copy each rank's row in and its column out.
  void runRoundV(Communicator &comm) {
    if (comm.backend() != Backend::Cpu)
      throw Error(ErrorCode::Unsupported, "executeV runs on the CPU backend here");
    const CallArgs &a0 = *slots[0];
    // Every rank passes the same matrix (runRound checked); each rank's buffers are checked against it.
    const runtime::CountMatrix m = countMatrix(*a0.plan, 0, a0);
    for (uint32_t r = 1; r < slots.size(); ++r)
      countMatrix(*a0.plan, r, *slots[r]);
    runtime::CountsResolver &res = resolverFor(currentPlan);
    const plan::Plan &concrete = res.resolve(m, a0.dtype);
    runtime::MessageSizes ms = res.sizes();
    if (!backend)
      backend = runtime::createExecutor(backendName(comm.backend()));
    const uint64_t e = plan::dataTypeBytes(a0.dtype);
    stagingIn.resize(slots.size());
    stagingOut.resize(slots.size());
    runtime::ExecuteRequest req;
    req.plan = &concrete;
    req.inputBytes = ms.inputBytes;
    req.outputBytes = ms.outputBytes;
    req.dataType = a0.dtype;
    req.reduceOp = a0.redop;
    for (uint32_t r = 0; r < slots.size(); ++r) {
      stagingIn[r].assign(ms.inputBytes, 0);
      stagingOut[r].assign(ms.outputBytes, 0);
      if (uint64_t b = m.rowSum(r) * e)
        std::memcpy(stagingIn[r].data(), slots[r]->send, b);
      req.buffers.push_back({stagingIn[r].data(), stagingOut[r].data()});
    }
    backend->execute(req);
    for (uint32_t r = 0; r < slots.size(); ++r)
      if (uint64_t b = m.colSum(r) * e)
        std::memcpy(slots[r]->recv, stagingOut[r].data(), b);
  }

  void executeLocal(Communicator &comm, int rank, const CallArgs &args, const PlanPtr &planPtr) {
    std::unique_lock<std::mutex> lk(mu);
    if (slots.empty())
      slots.resize(comm.worldSize());
    if (slots[rank])
      throw Error(ErrorCode::InvalidArgument, "rank " + std::to_string(rank) +
                                                  " calls execute again before the other ranks joined its call "
                                                  "(two threads with one rank?)");
    slots[rank] = args;
    if (rank == 0)
      currentPlan = planPtr;
    const uint64_t mine = generation;
    if (++arrived == slots.size()) {
      ErrorCode code = ErrorCode::Ok;
      std::string message;
      lk.unlock();
      try {
        runRound(comm);
      } catch (...) {
        code = detail::currentError(message);
      }
      lk.lock();
      currentPlan.reset();
      roundCode = code;
      roundMessage = message;
      for (auto &s : slots)
        s.reset();
      arrived = 0;
      ++generation;
      cv.notify_all();
    } else {
      auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
      if (!cv.wait_until(lk, deadline, [&] { return generation != mine; })) {
        if (missingRanks.empty())
          for (uint32_t r = 0; r < slots.size(); ++r)
            if (!slots[r])
              missingRanks += (missingRanks.empty() ? "" : ", ") + std::to_string(r);
        std::string missing = missingRanks;
        slots[rank].reset();
        if (--arrived == 0)
          missingRanks.clear();
        throw Error(ErrorCode::Misuse, "rank " + std::to_string(rank) + " waited " + std::to_string(timeout) +
                                           " s for the other ranks to call execute; missing: rank(s) " + missing);
      }
    }
    if (roundCode != ErrorCode::Ok)
      throw Error(roundCode, roundMessage);
  }

  /// AllToAllV, one process per rank: resolve with this Executor's resolver, and run the concrete
  /// plan in a RankSession cached per (plan, matrix, type) (a new matrix opens a session;
  /// every rank opens the same ones, checked by exchanging a digest of the matrix).
  struct SessionV {
    PlanPtr plan;
    std::vector<uint64_t> counts;
    plan::DataType dtype;
    std::unique_ptr<plan::Plan> concrete; // the session refers to it
    std::unique_ptr<runtime::RankSession> session;
  };
  std::list<SessionV> sessionsV;

  void executeProcessV(Communicator &comm, int rank, const CallArgs &a, const PlanPtr &planPtr, void *stream) {
    runtime::Communicator &rt = *comm.runtimeCommunicator();
    if (rank != rt.rank())
      throw Error(ErrorCode::InvalidArgument, "executeV: rank " + std::to_string(rank) +
                                                  " called in the process of rank " + std::to_string(rt.rank()));
    const plan::Plan &p = *a.plan;
    if (p.gpus.size() != comm.worldSize())
      throw Error(ErrorCode::InvalidPlan, "the plan has " + std::to_string(p.gpus.size()) +
                                              " ranks but the communicator " + std::to_string(comm.worldSize()));
    runtime::CountMatrix m = countMatrix(p, uint32_t(rank), a);
    auto it = sessionsV.begin();
    for (; it != sessionsV.end(); ++it)
      if (it->plan.get() == a.plan && it->dtype == a.dtype && it->counts == *a.counts)
        break;
    if (it == sessionsV.end()) {
      uint64_t digest = 1469598103934665603ull; // FNV-1a over the matrix
      for (uint64_t c : *a.counts)
        for (int b = 0; b < 8; ++b)
          digest = (digest ^ ((c >> (8 * b)) & 0xff)) * 1099511628211ull;
      uint64_t mineDesc[4] = {p.gpus.size(), uint64_t(a.dtype), a.counts->size(), digest};
      auto all = rt.allGather(mineDesc, sizeof mineDesc);
      for (size_t r = 0; r < all.size(); ++r)
        if (std::memcmp(all[r].data(), mineDesc, sizeof mineDesc) != 0)
          throw Error(ErrorCode::InvalidArgument, "rank " + std::to_string(r) +
                                                      " calls executeV with another plan size, data type or count "
                                                      "matrix than rank " + std::to_string(rt.rank()));
      runtime::CountsResolver &res = resolverFor(planPtr);
      SessionV s;
      s.plan = planPtr;
      s.counts = *a.counts;
      s.dtype = a.dtype;
      s.concrete = std::make_unique<plan::Plan>(res.resolve(m, a.dtype));
      runtime::MessageSizes ms = res.sizes();
      runtime::RunOptions o;
      o.size = std::max(ms.inputBytes, ms.outputBytes);
      o.dataType = a.dtype;
      o.reduceOp = a.redop;
      o.inPlace = false;
      o.check = false;
      runtime::DistributedOptions dist;
      dist.timeoutSeconds = timeout;
      if (sessionsV.size() >= kMaxSessions) {
        track(sessionsV.back().session.get(), false);
        sessionsV.pop_back();
      }
      s.session = runtime::openRankSession(backendName(comm.backend()), rt, *s.concrete, o, dist);
      track(s.session.get(), true);
      sessionsV.push_front(std::move(s));
      it = sessionsV.begin();
    } else if (it != sessionsV.begin()) {
      sessionsV.splice(sessionsV.begin(), sessionsV, it);
      it = sessionsV.begin();
    }
    const uint64_t e = plan::dataTypeBytes(a.dtype);
    const uint64_t inBytes = m.rowSum(uint32_t(rank)) * e, outBytes = m.colSum(uint32_t(rank)) * e;
    it->session->call(a.send, inBytes, a.recv, outBytes, stream);
  }

  void dispatch(Communicator &comm, int rank, const CallArgs &args, const PlanPtr &plan, void *stream) {
    if (aborted.load())
      throw Error(ErrorCode::Misuse, "execute: this Executor was aborted (Executor::abort, ncclCommAbort)");
    checkInPlace(*plan, uint32_t(rank), args);
    try {
      if (comm.isLocal()) {
        // The plan reads what the caller's kernels on `stream` wrote (a CUDA backend waits).
        if (!backend)
          backend = runtime::createExecutor(backendName(comm.backend()));
        backend->synchronizeStream(stream);
        executeLocal(comm, rank, args, plan);
        return;
      }
      if (args.counts)
        executeProcessV(comm, rank, args, plan, stream);
      else
        executeProcess(comm, rank, args, plan, stream);
    } catch (const Error &) {
      throw;
    } catch (...) {
      detail::rethrowAsError("execute");
    }
  }

  void executeProcess(Communicator &comm, int rank, const CallArgs &a, const PlanPtr &planPtr, void *stream) {
    runtime::Communicator &rt = *comm.runtimeCommunicator();
    if (rank != rt.rank())
      throw Error(ErrorCode::InvalidArgument, "execute: rank " + std::to_string(rank) + " called in the process of rank " +
                                                  std::to_string(rt.rank()));
    const plan::Plan &p = *a.plan;
    if (p.gpus.size() != comm.worldSize())
      throw Error(ErrorCode::InvalidPlan, "the plan has " + std::to_string(p.gpus.size()) +
                                              " ranks but the communicator " + std::to_string(comm.worldSize()));
    runtime::MessageSizes ms;
    try {
      ms = checkSizes(p, a.sendBytes, a.recvBytes, a.dtype);
      checkReduceOp(p, a.redop);
    } catch (const Error &) {
      // Tell the other ranks now (they would wait in the exchange below, or in the launch, until
      // MSCCL_TIMEOUT): an exchange with a descriptor no valid call makes, then this rank's error.
      uint64_t bad[5] = {~uint64_t(0), ~uint64_t(0), ~uint64_t(0), ~uint64_t(0), ~uint64_t(0)};
      try {
        rt.allGather(bad, sizeof bad);
      } catch (...) {
      }
      throw;
    }
    const bool inPlace = isInPlace(p, uint32_t(rank), a);
    const uint64_t S = std::max<uint64_t>(a.sendBytes, a.recvBytes);
    auto key = std::make_tuple(a.plan, ms.inputBytes, ms.outputBytes, inPlace, a.dtype, a.redop);
    auto it = sessions.begin();
    for (; it != sessions.end(); ++it)
      if (it->key == key)
        break;
    if (it == sessions.end()) {
      // Every rank must open the same session: compare what keys it (a clear error, not a hang).
      uint64_t mineDesc[5] = {p.gpus.size(), S, inPlace ? 1u : 0u, uint64_t(a.dtype), uint64_t(a.redop)};
      auto all = rt.allGather(mineDesc, sizeof mineDesc);
      for (size_t r = 0; r < all.size(); ++r)
        if (std::memcmp(all[r].data(), mineDesc, sizeof mineDesc) != 0)
          throw Error(ErrorCode::InvalidArgument,
                      "rank " + std::to_string(r) + " calls execute with another plan size, message size, in-place-ness, "
                      "data type or reduction than rank " + std::to_string(rt.rank()));
      if (sessions.size() >= kMaxSessions) {
        track(sessions.back().session.get(), false);
        sessions.pop_back(); // the same on every rank: they make the same calls
      }
      runtime::RunOptions o;
      o.size = S;
      o.dataType = a.dtype;
      o.reduceOp = a.redop;
      o.inPlace = inPlace;
      o.check = false;
      runtime::DistributedOptions dist;
      dist.timeoutSeconds = timeout;
      Session s;
      s.plan = planPtr;
      s.key = key;
      s.session = runtime::openRankSession(backendName(comm.backend()), rt, p, o, dist);
      track(s.session.get(), true);
      sessions.push_front(std::move(s));
      it = sessions.begin();
    } else if (it != sessions.begin()) {
      sessions.splice(sessions.begin(), sessions, it);
      it = sessions.begin();
    }
    it->session->call(a.send, a.sendBytes, a.recv, a.recvBytes, stream);
  }
};

Executor::Executor(std::shared_ptr<Communicator> comm) : comm_(std::move(comm)), impl_(std::make_unique<Impl>()) {
  if (!comm_)
    throw Error(ErrorCode::InvalidArgument, "Executor: null communicator");
  runtime::registerBuiltExecutors();
}

Executor::~Executor() = default;

void Executor::abort() { impl_->abortAll(); }

void Executor::pollError() {
  try {
    std::lock_guard<std::mutex> lock(impl_->liveMu); // sessions leave `live` before they close
    for (runtime::RankSession *s : impl_->live)
      s->poll();
  } catch (const Error &) {
    throw;
  } catch (...) {
    detail::rethrowAsError("Executor::pollError");
  }
}

void Executor::copy(void *dst, const void *src, size_t bytes, void *stream) {
  if (!bytes)
    return;
  try {
    if (!impl_->backend)
      impl_->backend = runtime::createExecutor(backendName(comm_->backend()));
    impl_->backend->synchronizeStream(stream); // a stream-ordered execute may still be running
    impl_->backend->download(dst, src, bytes);
  } catch (const Error &) {
    throw;
  } catch (...) {
    detail::rethrowAsError("Executor::copy");
  }
}

void Executor::setTimeout(double seconds) {
  if (!(seconds > 0))
    throw Error(ErrorCode::InvalidArgument, "Executor::setTimeout: the timeout must be positive");
  impl_->timeout = seconds;
}

void Executor::execute(int rank, const void *send, void *recv, size_t sendBytes, size_t recvBytes,
                       plan::DataType dtype, plan::ReduceOp redop, const PlanPtr &plan, void *stream) {
  Communicator &comm = *comm_;
  if (!plan)
    throw Error(ErrorCode::InvalidArgument, "execute: null plan");
  if (rank < 0 || uint32_t(rank) >= comm.worldSize())
    throw Error(ErrorCode::InvalidArgument, "execute: rank " + std::to_string(rank) + " is outside 0.." +
                                                std::to_string(comm.worldSize() - 1));
  if ((sendBytes && !send) || (recvBytes && !recv))
    throw Error(ErrorCode::InvalidArgument, "execute: null send or recv buffer");
  if (plan->variableSizes)
    throw Error(ErrorCode::InvalidArgument, "execute: the " + plan->collective +
                                                " plan has variable sizes (an AllToAllV): call executeV with the count "
                                                "matrix");
  CallArgs args{send, recv, sendBytes, recvBytes, dtype, redop, plan.get()};
  impl_->dispatch(comm, rank, args, plan, stream);
}

void Executor::executeV(int rank, const void *send, void *recv, size_t sendBytes, size_t recvBytes,
                        const std::vector<uint64_t> &counts, plan::DataType dtype, const PlanPtr &plan, void *stream) {
  Communicator &comm = *comm_;
  if (!plan)
    throw Error(ErrorCode::InvalidArgument, "executeV: null plan");
  if (rank < 0 || uint32_t(rank) >= comm.worldSize())
    throw Error(ErrorCode::InvalidArgument, "executeV: rank " + std::to_string(rank) + " is outside 0.." +
                                                std::to_string(comm.worldSize() - 1));
  if (!plan->variableSizes)
    throw Error(ErrorCode::InvalidArgument, "executeV: the " + plan->collective +
                                                " plan has fixed sizes (no variable_sizes): call execute without "
                                                "counts, or use an AllToAllV plan such as stdlib:alltoallv/allpairs");
  CallArgs args{send, recv, sendBytes, recvBytes, dtype, plan::ReduceOp::Sum, plan.get(), &counts};
  impl_->dispatch(comm, rank, args, plan, stream);
}

} // namespace msccl
