#include "probes/flight_recorder.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "trace/clock.h"
#include "trace/flight_dump.h"
#include "trace/run_files.h"

namespace dsdiag::probes {
namespace {

template <size_t N>
void CopyName(char (&dst)[N], std::string_view src) {
  const size_t n = src.size() < N - 1 ? src.size() : N - 1;
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}

trace::FlightState ToTrace(CollectiveState s) {
  switch (s) {
    case CollectiveState::kIssued:
      return trace::FlightState::kIssued;
    case CollectiveState::kStarted:
      return trace::FlightState::kStarted;
    case CollectiveState::kCompleted:
      return trace::FlightState::kCompleted;
  }
  return trace::FlightState::kIssued;
}

trace::FlightDumpEntry ToTrace(const FlightEntry& e) {
  trace::FlightDumpEntry out;
  out.pg = e.pg;
  out.seq = e.seq;
  out.op = e.op;
  out.dtype = e.dtype;
  out.n = e.count;
  out.bytes = e.bytes;
  out.tag = e.tag;
  out.step = e.step;
  out.phase = std::string(PhaseName(e.phase));
  out.state = ToTrace(e.state);
  out.issued = e.t_issued;
  if (e.t_started) out.started = e.t_started;
  if (e.t_completed) out.completed = e.t_completed;
  if (e.p2p) {
    out.peer = e.peer;
    out.group_peer = e.group_peer;
    out.match_tag = e.match_tag;
  }
  for (int i = 0; i < e.peer_counts; ++i) {
    if (e.peers_listed) out.counts.peers.push_back(e.peers[i]);
    out.counts.send.push_back(e.send[i]);
    out.counts.recv.push_back(e.recv[i]);
  }
  return out;
}

void CopyCounts(const trace::PeerCounts* counts, FlightEntry* e) {
  if (counts == nullptr || !counts->consistent() ||
      counts->send.size() > static_cast<size_t>(kMaxPeerCounts))
    return;
  e->peer_counts = static_cast<int>(counts->send.size());
  e->peers_listed = !counts->peers.empty();
  for (size_t i = 0; i < counts->send.size(); ++i) {
    if (e->peers_listed) e->peers[i] = counts->peers[i];
    e->send[i] = counts->send[i];
    e->recv[i] = counts->recv[i];
  }
}

}  // namespace

FlightRecorder::FlightRecorder(const trace::TraceHeader& header, std::string run_dir,
                               size_t capacity)
    : header_(header),
      run_dir_(std::move(run_dir)),
      ring_(capacity ? capacity : 1),
      p2p_ring_(capacity ? capacity : 1) {}

FlightEntry* FlightRecorder::Find(int64_t handle) noexcept {
  std::vector<FlightEntry>& ring = handle < 0 ? p2p_ring_ : ring_;
  const int64_t id = handle < 0 ? -handle : handle;
  FlightEntry& e = ring[static_cast<size_t>(id) % ring.size()];
  return e.id == id ? &e : nullptr;  // else overwritten: the ring wrapped around meanwhile
}

int64_t FlightRecorder::IssueP2P(const P2PIssue& op, int64_t step, Phase phase) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t id = next_id_++;
  FlightEntry& e = p2p_ring_[static_cast<size_t>(id) % p2p_ring_.size()];
  e = FlightEntry{};
  e.id = id;
  e.p2p = true;
  e.pg = op.pg;
  e.seq = op.seq;
  CopyName(e.op, op.op);
  e.peer = op.peer;
  e.group_peer = op.group_peer;
  e.match_tag = op.match_tag;
  CopyName(e.dtype, op.dtype);
  CopyName(e.tag, op.tag);
  e.count = op.count;
  e.bytes = op.bytes;
  e.step = step;
  e.phase = phase;
  e.t_issued = trace::MonotonicNs();
  return -id;
}

void FlightRecorder::SetPeer(int64_t handle, int64_t peer, int64_t group_peer,
                             int64_t seq) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  if (FlightEntry* e = Find(handle)) {
    e->peer = peer;
    e->group_peer = group_peer;
    e->seq = seq;
  }
}

int64_t FlightRecorder::Issue(int pg, int64_t seq, std::string_view op, std::string_view dtype,
                              int64_t count, int64_t bytes, std::string_view tag, int64_t step,
                              Phase phase, const trace::PeerCounts* counts) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t id = next_id_++;
  FlightEntry& e = ring_[id % ring_.size()];
  e = FlightEntry{};
  e.id = id;
  e.pg = pg;
  e.seq = seq;
  CopyName(e.op, op);
  CopyName(e.dtype, dtype);
  CopyName(e.tag, tag);
  e.count = count;
  e.bytes = bytes;
  e.step = step;
  e.phase = phase;
  CopyCounts(counts, &e);
  e.t_issued = trace::MonotonicNs();
  return id;
}

void FlightRecorder::Start(int64_t handle) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  FlightEntry* e = Find(handle);
  if (e == nullptr || e->state == CollectiveState::kCompleted) return;
  e->state = CollectiveState::kStarted;
  e->t_started = trace::MonotonicNs();
}

void FlightRecorder::Complete(int64_t handle) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  FlightEntry* e = Find(handle);
  if (e == nullptr) return;
  e->state = CollectiveState::kCompleted;
  e->t_completed = trace::MonotonicNs();
}

bool FlightRecorder::OldestPending(FlightEntry* out) const noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  bool found = false;
  auto consider = [&](const FlightEntry& e) {
    if (!found || e.id < out->id) *out = e;
    found = true;
  };
  for (const FlightEntry& e : ring_)
    if (e.id != 0 && e.state != CollectiveState::kCompleted) consider(e);
  // A message is a hang only while the rank waits in it: a request posted and never waited
  // on stays "issued" for good, and must not trip the watchdog.
  for (const FlightEntry& e : p2p_ring_)
    if (e.id != 0 && e.state == CollectiveState::kStarted) consider(e);
  return found;
}

std::string FlightRecorder::DumpJson(std::string_view reason, int64_t step, Phase phase,
                                     bool ask_stacks) const {
  std::vector<FlightEntry> entries, p2p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const FlightEntry& e : ring_)
      if (e.id != 0) entries.push_back(e);
    for (const FlightEntry& e : p2p_ring_)
      if (e.id != 0) p2p.push_back(e);
  }
  auto by_id = [](const FlightEntry& a, const FlightEntry& b) { return a.id < b.id; };
  std::sort(entries.begin(), entries.end(), by_id);
  std::sort(p2p.begin(), p2p.end(), by_id);
  trace::FlightDump dump;
  dump.run_id = header_.run_id;
  dump.rank = header_.rank;
  dump.world_size = header_.world_size;
  dump.reason = std::string(reason);
  dump.ts = trace::MonotonicNs();
  dump.clock = header_.clock;
  dump.where_step = step;
  dump.where_phase = std::string(PhaseName(phase));
  for (const FlightEntry& e : entries) dump.entries.push_back(ToTrace(e));
  for (const FlightEntry& e : p2p) dump.p2p.push_back(ToTrace(e));
  std::shared_ptr<const StackProvider> provider;
  if (ask_stacks) {
    std::lock_guard<std::mutex> lock(provider_mu_);
    provider = stack_provider_;
  }
  if (provider) dump.stacks = (*provider)();
  return trace::FlightDumpJson(dump);
}

void FlightRecorder::SetStackProvider(StackProvider provider) {
  auto shared = provider ? std::make_shared<const StackProvider>(std::move(provider)) : nullptr;
  std::lock_guard<std::mutex> lock(provider_mu_);
  stack_provider_ = std::move(shared);
}

std::string FlightRecorder::dump_path() const {
  return run_dir_ + "/" + trace::FlightDumpFileName(header_.rank);
}

bool FlightRecorder::Dump(std::string_view reason, int64_t step, Phase phase, std::string* error,
                          bool ask_stacks) const {
  // One dump at a time: an exception's dump on the main thread and a SIGTERM's on the
  // stop-signal thread can coincide (the launcher stops a rank that is failing), and two
  // writers of one temporary file leave a mixed one behind.
  std::lock_guard<std::mutex> one_at_a_time(dump_mu_);
  const std::string json = DumpJson(reason, step, phase, ask_stacks);
  // Write to a temporary name, then rename: a reader never sees half a dump.
  const std::string path = dump_path();
  const std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) {
    *error = "cannot write " + tmp + ": " + std::strerror(errno);
    return false;
  }
  const bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const bool closed = std::fclose(f) == 0;
  if (!ok || !closed || std::rename(tmp.c_str(), path.c_str()) != 0) {
    *error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace dsdiag::probes
