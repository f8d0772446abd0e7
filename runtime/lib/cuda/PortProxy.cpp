//===- PortProxy.cpp - Host proxy thread serving the port channels' FIFOs ---------------===//
//
// See PortProxy.h. One thread polls every rank's FIFO round robin; when nothing arrives for a
// while it yields, then sleeps briefly, so that an idle proxy does not take a core.
//
//===------------------------------------------------------------------------------------===//
#include "PortProxy.h"

#include <chrono>

namespace msccl::cuda::detail {

void PortProxy::start(DeviceApi &api, std::vector<ProxyRank> *ranks) {
  stop();
  api_ = &api;
  ranks_ = ranks;
  stop_ = false;
  {
    std::lock_guard<std::mutex> l(mutex_);
    error_.clear();
  }
  thread_ = std::thread([this] { loop(); });
}

void PortProxy::stop() {
  if (!thread_.joinable()) return;
  stop_ = true;
  thread_.join();
}

std::string PortProxy::error() {
  std::lock_guard<std::mutex> l(mutex_);
  return error_;
}

void PortProxy::fail(const std::string &msg) {
  std::lock_guard<std::mutex> l(mutex_);
  if (error_.empty()) error_ = msg;
}

void PortProxy::remoteFailed(const std::string &error) {
  if (!error.empty()) fail("port channel to another node: " + error);
}

bool PortProxy::serve(ProxyRank &r) {
  volatile DevProxyRequest *s = r.slots + (r.tail % r.capacity);
  if (__atomic_load_n(const_cast<uint32_t *>(&s->seq), __ATOMIC_ACQUIRE) != (uint32_t)(r.tail + 1)) return false;
  const uint64_t srcOff = s->srcOffset, dstOff = s->dstOffset, size = s->size;
  const uint32_t meta = s->meta;
  const uint32_t kind = proxyMetaKind(meta), ch = proxyMetaChannel(meta), rb = proxyMetaRemoteBuffer(meta),
                 lb = proxyMetaLocalBuffer(meta);
  const RemoteTarget *remoteBuffer = rb < r.remoteBuffers.size() && r.remoteBuffers[rb].rank >= 0 ? &r.remoteBuffers[rb] : nullptr;
  const RemoteTarget *remoteSignal = ch < r.remoteSignals.size() && r.remoteSignals[ch].rank >= 0 ? &r.remoteSignals[ch] : nullptr;
  if ((kind & kProxyData) && size) {
    if (lb > 2 || !r.local[lb] || (!remoteBuffer && (rb >= r.remoteBases.size() || !r.remoteBases[rb])))
      fail("port request names a buffer that does not exist (remote buffer " + std::to_string(rb) + ")");
    else if (remoteBuffer)
      remoteFailed(r.remote->put(r.device, r.stream, uint32_t(remoteBuffer->rank), remoteBuffer->index, dstOff,
                              r.local[lb] + srcOff, size));
    else {
      try {
        api_->copyAsync(r.device, r.remoteBases[rb] + dstOff, r.local[lb] + srcOff, size, r.stream);
      } catch (const std::exception &e) {
        fail(std::string("port copy: ") + e.what());
      }
      r.copiesInFlight = true;
    }
  }
  if ((kind & (kProxyFlag | kProxySync)) && r.copiesInFlight) {
    try {
      api_->synchronize(r.device, r.stream);
    } catch (const std::exception &e) {
      fail(std::string("port copy: ") + e.what());
    }
    r.copiesInFlight = false;
  }
  if (kind & kProxyFlag) {
    if (remoteSignal) remoteFailed(r.remote->signal(uint32_t(remoteSignal->rank), remoteSignal->index));
    else if (ch >= r.flagTargets.size() || !r.flagTargets[ch])
      fail("port signal on channel " + std::to_string(ch) + " that does not exist");
    else {
      __atomic_fetch_add(r.flagTargets[ch], 1, __ATOMIC_RELEASE);
      api_->hostWrote(r.flagTargets[ch]);
    }
  }
  if ((kind & kProxySync) && r.remote) remoteFailed(r.remote->flush());
  ++r.tail;
  __atomic_store_n(r.completed, r.tail, __ATOMIC_RELEASE);
  api_->hostWrote(r.completed);
  return true;
}

bool PortProxy::waitIdle(const std::vector<uint64_t> &pushed, double timeoutSeconds) const {
  if (!ranks_) return true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  for (size_t r = 0; r < pushed.size() && r < ranks_->size(); ++r) {
    const ProxyRank &p = (*ranks_)[r];
    if (!p.completed) continue;
    unsigned idle = 0;
    while (__atomic_load_n(p.completed, __ATOMIC_ACQUIRE) < pushed[r]) {
      if (timeoutSeconds > 0 && std::chrono::steady_clock::now() > deadline) return false;
      if (++idle < 256) std::this_thread::yield();
      else std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return true;
}

std::string PortProxy::syncCopies() {
  std::string err;
  if (!ranks_) return err;
  for (ProxyRank &r : *ranks_) {
    if (!r.copiesInFlight) continue;
    try {
      api_->synchronize(r.device, r.stream);
    } catch (const std::exception &e) {
      if (err.empty()) err = std::string("port copy: ") + e.what();
    }
    r.copiesInFlight = false;
  }
  for (ProxyRank &r : *ranks_)
    if (r.remote) {
      const std::string e = r.remote->flush();
      if (!e.empty() && err.empty()) err = "port channel to another node: " + e;
    }
  return err;
}

void PortProxy::loop() {
  unsigned idle = 0;
  while (!stop_.load(std::memory_order_relaxed)) {
    bool any = false;
    for (ProxyRank &r : *ranks_)
      while (r.slots && serve(r)) any = true;
    if (any) {
      idle = 0;
      continue;
    }
    if (++idle < 256) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

} // namespace msccl::cuda::detail
