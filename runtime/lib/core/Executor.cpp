//===- Executor.cpp - Errors and the backend registry ------------------------------------===//
//
// Implements the backend-neutral pieces of Executor.h: error formatting and the process-wide
// registry of backend factories (name -> factory), guarded by a mutex.
//
//===------------------------------------------------------------------------------------===//
#include "msccl/runtime/Executor.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace msccl::runtime {

std::string_view packetTypeName(PacketType p) { return p == PacketType::LL16 ? "LL16" : "LL8"; }

std::string_view errorKindName(ErrorKind k) {
  switch (k) {
  case ErrorKind::InvalidPlan: return "invalid plan";
  case ErrorKind::InvalidSize: return "invalid message size";
  case ErrorKind::Deadlock: return "deadlock";
  case ErrorKind::Misuse: return "misuse";
  case ErrorKind::Unsupported: return "unsupported";
  case ErrorKind::Backend: return "backend error";
  }
  return "error";
}

static std::string formatError(const std::string &summary, const std::vector<std::string> &diags) {
  std::string s = summary;
  for (const std::string &d : diags) {
    s += "\n  ";
    s += d;
  }
  return s;
}

ExecutionError::ExecutionError(ErrorKind kind, std::string summary, std::vector<std::string> diagnostics)
    : std::runtime_error(formatError(summary, diagnostics)), kind_(kind), summary_(std::move(summary)),
      diagnostics_(std::move(diagnostics)) {}

Executor::~Executor() = default;

namespace {
struct Entry {
  std::string description;
  ExecutorFactory factory;
};
std::mutex &registryMutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, Entry> &registry() {
  static std::map<std::string, Entry> r;
  return r;
}
} // namespace

void registerExecutor(const std::string &name, const std::string &description, ExecutorFactory factory) {
  std::lock_guard<std::mutex> lock(registryMutex());
  registry()[name] = Entry{description, std::move(factory)};
}

std::vector<std::string> registeredExecutors() {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::vector<std::string> names;
  for (const auto &kv : registry())
    names.push_back(kv.first);
  return names;
}

bool hasExecutor(const std::string &name) {
  std::lock_guard<std::mutex> lock(registryMutex());
  return registry().count(name) != 0;
}

std::unique_ptr<Executor> createExecutor(const std::string &name, const BackendOptions &options) {
  ExecutorFactory factory;
  {
    std::lock_guard<std::mutex> lock(registryMutex());
    auto it = registry().find(name);
    if (it != registry().end())
      factory = it->second.factory;
  }
  if (!factory) {
    std::string known;
    for (const std::string &n : registeredExecutors())
      known += (known.empty() ? "" : ", ") + n;
    std::string why = "no executor backend named '" + name + "' in this build (available: " + known + ")";
    if (name == "cuda")
      why = "the CUDA executor backend is not built in this build of msccl (no CUDA toolkit was found "
            "at configure time, or MSCCL_ENABLE_CUDA=OFF); available backends: " + known;
    throw ExecutionError(ErrorKind::Unsupported, why);
  }
  return factory(options);
}

} // namespace msccl::runtime
