//===- Rendezvous.cpp - The unique-id bootstrap's messages and rank 0's rendezvous ---------===//
// See Rendezvous.h.
#include "Rendezvous.h"

#include <cstring>

namespace msccl::runtime::rendezvous {

std::string encode(const Header &h, const void *data, size_t bytes) {
  std::string buf(sizeof h + bytes, '\0');
  std::memcpy(buf.data(), &h, sizeof h);
  if (bytes)
    std::memcpy(buf.data() + sizeof h, data, bytes);
  return buf;
}

bool decode(const std::vector<std::string> &parts, uint64_t nonce, Message &m, std::string &route) {
  if (parts.empty())
    return false;
  const std::string &body = parts.back();
  if (body.size() < sizeof(Header))
    return false; // not ours
  Header h;
  std::memcpy(&h, body.data(), sizeof h);
  if (h.nonce != nonce)
    return false; // a stray peer of another job
  m.h = h;
  m.data.assign(body, sizeof h, std::string::npos);
  route = parts.size() > 1 ? parts.front() : std::string();
  return true;
}

RootRendezvous::RootRendezvous(int size, std::string host)
    : size_(size < 1 ? 1 : size), hosts_(size_t(size_)), routes_(size_t(size_)), have_(size_t(size_), false) {
  hosts_[0] = std::move(host);
  have_[0] = true;
}

RootRendezvous::Verdict RootRendezvous::offer(const Message &m, const std::string &route) {
  if (m.h.kind != Hello || failed() || complete())
    return Verdict::Ignored;
  const int r = m.h.rank;
  if (m.h.value != size_)
    error_ = "rank " + std::to_string(r) + " joined a job of " + std::to_string(m.h.value) + " ranks, rank 0 one of " +
             std::to_string(size_);
  else if (r <= 0 || r >= size_)
    error_ = "a process joined as rank " + std::to_string(r) + " of " + std::to_string(size_);
  else if (have_[size_t(r)])
    error_ = "two processes joined as rank " + std::to_string(r);
  else if (m.data != hosts_[0])
    error_ = "rank " + std::to_string(r) + " runs on another host (" + m.data.substr(0, 256) + ", rank 0 on " +
             hosts_[0] + "): the unique-id bootstrap is for one machine; launch multi-node jobs with mpirun";
  if (!error_.empty()) {
    strays_.push_back(route);
    return Verdict::Refused;
  }
  have_[size_t(r)] = true;
  hosts_[size_t(r)] = m.data;
  routes_[size_t(r)] = route;
  ++joined_;
  return Verdict::Joined;
}

std::string RootRendezvous::missing() const {
  std::string out;
  for (int r = 0; r < size_; ++r)
    if (!have_[size_t(r)])
      out += (out.empty() ? "" : ",") + std::to_string(r);
  return out;
}

std::string RootRendezvous::welcome() const {
  std::string all;
  for (const std::string &h : hosts_)
    all += h + '\n';
  return all;
}

bool parseWelcome(const std::string &data, int size, std::vector<std::string> &hosts, std::string &error) {
  hosts.clear();
  size_t pos = 0;
  for (int r = 0; r < size; ++r) {
    size_t nl = data.find('\n', pos);
    if (nl == std::string::npos) {
      error = "rank 0's welcome names " + std::to_string(r) + " hosts, the job has " + std::to_string(size) + " ranks";
      return false;
    }
    hosts.push_back(data.substr(pos, nl - pos));
    pos = nl + 1;
  }
  if (pos != data.size()) {
    error = "rank 0's welcome names more hosts than the job's " + std::to_string(size) + " ranks";
    return false;
  }
  return true;
}

} // namespace msccl::runtime::rendezvous
