#include "probes/records/collective_steps.h"

#include <utility>

#include "probes/session.h"
#include "trace/records/coll_record.h"
#include "trace/records/colls_record.h"

namespace dsdiag::probes::records {
namespace {

int64_t RoundToUs(int64_t ns) { return (ns + 500) / 1000; }

}  // namespace

bool CollectiveSteps::Holds(const CollectiveRecord& r) const {
  // An op with per-peer sizes is written at once: its sizes move from step to step (an MoE's
  // routing), so it never repeats the previous step's, and no template needs to hold them.
  const bool has_counts = r.counts != nullptr && !r.counts->empty();
  return compact_ && !r.failed && !has_counts && loop_thread_ == std::this_thread::get_id();
}

void CollectiveSteps::BeginStep(probes::Session* session) {
  std::lock_guard<std::mutex> lock(mu_);
  FlushHeldLocked(session);
  loop_thread_ = std::this_thread::get_id();
}

void CollectiveSteps::Write(probes::Session* session, const CollectiveRecord& r) {
  HeldOp op{*r.what, r.seq, r.enter_ns, r.done_ns};
  std::lock_guard<std::mutex> lock(mu_);
  if (Holds(r)) {
    held_[r.pg].push_back(std::move(op));
    return;
  }
  // Held ops of the group go first, so that the file lists the group's ops in order.
  if (auto it = held_.find(r.pg); it != held_.end()) {
    for (const HeldOp& h : it->second) WriteFull(session, r.pg, h, false);
    held_.erase(it);
  }
  WriteFull(session, r.pg, op, r.failed, r.counts);
}

int64_t CollectiveSteps::EndStep(probes::Session* session) {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t compacted = 0;
  for (const auto& [pg, ops] : held_) compacted += WriteGroup(session, pg, ops);
  held_.clear();
  return compacted;
}

void CollectiveSteps::FlushHeld(probes::Session* session) {
  std::lock_guard<std::mutex> lock(mu_);
  FlushHeldLocked(session);
}

void CollectiveSteps::FlushHeldLocked(probes::Session* session) {
  for (const auto& [pg, ops] : held_)
    for (const HeldOp& op : ops) WriteFull(session, pg, op, false);
  held_.clear();
}

void CollectiveSteps::WriteFull(probes::Session* session, int pg, const HeldOp& op, bool failed,
                                const trace::PeerCounts* counts) {
  trace::records::CollRecord r;
  r.pg = pg;
  r.seq = op.seq;
  r.op = op.what.op;
  r.dtype = op.what.dtype;
  r.count = op.what.count;
  r.bytes = op.what.bytes;
  r.dur = op.done_ns - op.enter_ns;
  r.tag = op.what.tag;
  r.site = op.what.site;
  r.failed = failed;
  r.counts = counts;
  {
    auto record = session->writer()->BeginAt(r.kType, op.enter_ns);
    AppendFields(r, &record.line());
  }
  template_.Add(pg, session->writer()->step(), op.what);
}

bool CollectiveSteps::Repeats(int pg, int64_t step, const std::vector<HeldOp>& ops) const {
  const std::vector<trace::Collective>* previous = template_.PreviousStep(pg, step, ops.size());
  if (previous == nullptr || previous->size() != ops.size()) return false;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].what != (*previous)[i] || ops[i].seq != ops[0].seq + static_cast<int64_t>(i))
      return false;
  }
  return true;
}

int64_t CollectiveSteps::WriteGroup(probes::Session* session, int pg,
                                    const std::vector<HeldOp>& ops) {
  const int64_t step = session->writer()->step();
  if (!Repeats(pg, step, ops)) {
    for (const HeldOp& op : ops) WriteFull(session, pg, op, false);
    return 0;
  }
  // Times in whole microseconds (what timelines show; findings work in milliseconds): a
  // step's five ops cost 30 bytes less than in nanoseconds.
  const int64_t ts = ops.front().enter_ns;
  trace::records::CollsRecord& r = colls_;  // its arrays keep their capacity: no allocation
  r.pg = pg;
  r.seq = ops.front().seq;
  r.at_us.clear();
  r.dur_us.clear();
  for (const HeldOp& op : ops) {
    r.at_us.push_back(RoundToUs(op.enter_ns - ts));
    r.dur_us.push_back(RoundToUs(op.done_ns - op.enter_ns));
  }
  {
    auto record = session->writer()->BeginAt(r.kType, ts);
    AppendFields(r, &record.line());
  }
  template_.Repeat(pg, step, ops.size());
  return static_cast<int64_t>(ops.size());
}

}  // namespace dsdiag::probes::records
