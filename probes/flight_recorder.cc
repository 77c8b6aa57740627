#include "probes/flight_recorder.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <utility>

#include "trace/clock.h"
#include "trace/flight_dump.h"
#include "trace/run_files.h"

namespace dsdiag::probes {
namespace {

using trace::CollectiveState;

// Reuses slot `e` for a new entry: its names' strings keep their capacity, so that once the
// ring has gone round an entry allocates nothing (and a name longer than any before, out of
// memory, leaves it empty rather than throwing into the loop).
void Reset(FlightEntry* e, int64_t id, const trace::Collective& what) noexcept {
  trace::Collective kept = std::move(e->what);
  *e = FlightEntry{};
  e->id = id;
  e->what = std::move(kept);
  try {
    e->what.op = what.op;
    e->what.dtype = what.dtype;
    e->what.tag = what.tag;
  } catch (const std::exception&) {
    e->what.op.clear();
    e->what.dtype.clear();
    e->what.tag.clear();
  }
  e->what.count = what.count;
  e->what.bytes = what.bytes;
  e->what.site = what.site;
}

trace::FlightDumpEntry ToTrace(const FlightEntry& e) {
  trace::FlightDumpEntry out;
  out.pg = e.pg;
  out.seq = e.seq;
  out.what = e.what;
  out.step = e.step;
  out.phase = std::string(PhaseName(e.phase));
  out.state = e.state;
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

int64_t FlightRecorder::IssueP2P(const PeerMessage& m, int64_t seq, int64_t step,
                                 Phase phase) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t id = next_id_++;
  FlightEntry& e = p2p_ring_[static_cast<size_t>(id) % p2p_ring_.size()];
  Reset(&e, id, m.what);
  e.p2p = true;
  e.pg = m.pg;
  e.seq = seq;
  e.peer = m.peer;
  e.group_peer = m.group_peer;
  e.match_tag = m.match_tag;
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

int64_t FlightRecorder::Issue(int pg, int64_t seq, const trace::Collective& what, int64_t step,
                              Phase phase, const trace::PeerCounts* counts) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t id = next_id_++;
  FlightEntry& e = ring_[id % ring_.size()];
  Reset(&e, id, what);
  e.pg = pg;
  e.seq = seq;
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

void FlightRecorder::AddSite(int64_t id, std::string_view file, int64_t line,
                             std::string_view fn) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  try {
    sites_.push_back({id, std::string(file), line, std::string(fn)});
  } catch (const std::exception&) {  // out of memory: the dump names the id alone
  }
}

bool FlightRecorder::OldestPending(FlightEntry* out) const noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  const FlightEntry* oldest = nullptr;
  auto consider = [&](const FlightEntry& e) {
    if (oldest == nullptr || e.id < oldest->id) oldest = &e;
  };
  for (const FlightEntry& e : ring_)
    if (e.id != 0 && e.state != CollectiveState::kCompleted) consider(e);
  // A message is a hang only while the rank waits in it: a request posted and never waited
  // on stays "issued" for good, and must not trip the watchdog.
  for (const FlightEntry& e : p2p_ring_)
    if (e.id != 0 && e.state == CollectiveState::kStarted) consider(e);
  if (oldest == nullptr) return false;
  try {
    *out = *oldest;
  } catch (const std::exception&) {  // out of memory for its names: the times still tell
    out->id = oldest->id;
    out->pg = oldest->pg;
    out->seq = oldest->seq;
    out->state = oldest->state;
    out->t_issued = oldest->t_issued;
    out->t_started = oldest->t_started;
  }
  return true;
}

std::string FlightRecorder::DumpJson(std::string_view reason, int64_t step, Phase phase,
                                     bool ask_stacks) const {
  if (ask_stacks) Refresh();  // before the entries are copied: their states as of now
  std::vector<FlightEntry> entries, p2p;
  trace::FlightDump dump;
  {
    std::lock_guard<std::mutex> lock(mu_);
    dump.sites = sites_;
    for (const FlightEntry& e : ring_)
      if (e.id != 0) entries.push_back(e);
    for (const FlightEntry& e : p2p_ring_)
      if (e.id != 0) p2p.push_back(e);
  }
  auto by_id = [](const FlightEntry& a, const FlightEntry& b) { return a.id < b.id; };
  std::sort(entries.begin(), entries.end(), by_id);
  std::sort(p2p.begin(), p2p.end(), by_id);
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

void FlightRecorder::SetRefresher(Refresher refresher) {
  auto shared = refresher ? std::make_shared<const Refresher>(std::move(refresher)) : nullptr;
  std::lock_guard<std::mutex> lock(provider_mu_);
  refresher_ = std::move(shared);
}

void FlightRecorder::Refresh() const {
  std::shared_ptr<const Refresher> refresher;
  {
    std::lock_guard<std::mutex> lock(provider_mu_);
    refresher = refresher_;
  }
  if (refresher) (*refresher)();
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
