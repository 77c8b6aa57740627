// The collective-mismatch follow-on pass: when ranks issued different collectives at one
// (pg, seq), the backend fails or hangs there — Gloo throws on the rank that got too many
// bytes, the launcher then stops every other rank, a backend that waits forever trips the
// watchdog. Each of those is reported (rank-died, hang) and would be one more error for one
// cause. This pass marks them `info` follow-ons of the mismatch:
//   - a rank-died warning or error whose ranks were left waiting in the mismatched collective
//     or a later one of its process group (evidence `waiting_in`);
//   - a rank-died finding that only says a rank was stopped by SIGTERM or SIGINT, from the
//     mismatch's step on (the launcher tearing the failed job down);
//   - a hang stuck in the mismatched collective or a later one of its process group;
//   - where the ranks' streams parted (evidence `parted_at`), a rank-died finding of other
//     ranks than those that parted, from the parting's step on: the parted ranks ran out of
//     collectives first, and the others failed waiting in one they never issue.
// Process groups created in another order on some ranks (evidence `wiring`: their names
// stand for other ranks there) break every collective of the job from its start: each
// rank-died warning or error and each hang of the run is a follow-on.
// A point-to-point message whose send and recv disagree (evidence `p2p`, numbered per pair,
// not in the group's sequence) has its own consequences: the receiver Gloo aborted (a
// rank-died of a receiving rank of a disagreeing pair, from the mismatch's step on), the
// ranks stopped after it, and a hang from its step on.
// The mismatch finding itself names the culprits; it is left as it is.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "analyzers/framework/finding_kinds.h"
#include "analyzers/framework/findings_pass.h"
#include "analyzers/passes/follow_on.h"

namespace dsdiag::analyzers {
namespace {

using follow_on::Cause;

struct Mismatch {
  int64_t pg = 0;
  int64_t seq = 0;
  int64_t step = 0;
  Cause cause;
  bool majority = true;            // false: the culprits are every rank of a split with no odd side
  bool per_peer = false;           // an all-to-all's per-peer sizes disagree (evidence `pairs`)
  bool p2p = false;                // a send and its recv disagree (evidence `p2p`)
  bool wiring = false;             // groups created in another order (evidence `wiring`)
  std::vector<int64_t> receivers;  // p2p: the receiving rank of each disagreeing pair
  const trace::JsonValue* parted_at = nullptr;  // where the ranks' streams parted, if known
};

bool IsTrue(const trace::JsonValue* v) {
  return v && v->kind() == trace::JsonValue::Kind::kBool && v->as_bool();
}

// The `to` of each of evidence.pairs.
std::vector<int64_t> Receivers(const trace::JsonValue& evidence) {
  std::vector<int64_t> ranks;
  const trace::JsonValue* pairs = evidence.Find("pairs");
  if (pairs == nullptr || pairs->kind() != trace::JsonValue::Kind::kArray) return ranks;
  for (const trace::JsonValue& p : pairs->elements())
    if (const auto to = follow_on::IntMember(p, "to")) ranks.push_back(*to);
  return ranks;
}

std::optional<Mismatch> MismatchOf(const Finding& f) {
  if (f.kind != kind::kCollectiveMismatch || f.severity == Severity::kInfo) return std::nullopt;
  const auto pg = follow_on::IntMember(f.evidence, "pg");
  const trace::JsonValue* majority = f.evidence.Find("majority");
  if (IsTrue(f.evidence.Find("wiring"))) {
    Mismatch m;
    m.cause = Cause{std::string(kind::kCollectiveMismatch), f.subject.value_or(""), f.ranks};
    m.majority = !(majority && !IsTrue(majority));
    m.wiring = true;
    return m;
  }
  if (pg && IsTrue(f.evidence.Find("p2p"))) {
    Mismatch m;
    m.pg = *pg;
    m.step = f.step.value_or(0);
    m.cause = Cause{std::string(kind::kCollectiveMismatch), f.subject.value_or(""), f.ranks};
    m.majority = !(majority && !IsTrue(majority));
    m.p2p = true;
    m.receivers = Receivers(f.evidence);
    return m;
  }
  const auto seq = follow_on::IntMember(f.evidence, "seq");
  if (!pg || !seq) return std::nullopt;
  Mismatch m{
      *pg,
      *seq,
      f.step.value_or(0),
      Cause{std::string(kind::kCollectiveMismatch), f.subject.value_or(""), f.ranks},
      !(majority && majority->kind() == trace::JsonValue::Kind::kBool && !majority->as_bool()),
      f.evidence.Find("pairs") != nullptr};
  m.parted_at = f.evidence.Find("parted_at");
  // The parting comes first: what follows it is shifted, a consequence as well.
  if (const auto parted = m.parted_at ? follow_on::IntMember(*m.parted_at, "seq") : std::nullopt)
    m.seq = std::min(m.seq, *parted);
  return m;
}

bool InOrAfter(const Mismatch& m, int64_t pg, int64_t seq) { return pg == m.pg && seq >= m.seq; }

// A consequence of a message whose sides disagree, and in what words.
std::optional<std::string> MessageConsequence(const Mismatch& m, const Finding& f) {
  if (f.step.value_or(m.step) < m.step) return std::nullopt;
  if (f.kind == kind::kRankDied) {
    const bool receivers =
        !f.ranks.empty() && std::all_of(f.ranks.begin(), f.ranks.end(), [&](int r) {
          return std::count(m.receivers.begin(), m.receivers.end(), r) > 0;
        });
    if (receivers) return "it received the message its sender sized differently";
    if (follow_on::StoppedBySignal(f)) return "stopped after the mismatch failed the job";
    return std::nullopt;
  }
  if (f.kind == kind::kHang) return "stuck after the mismatched message";
  return std::nullopt;
}

// A consequence of `m`, and in what words.
std::optional<std::string> Consequence(const Mismatch& m, const Finding& f) {
  if (f.severity == Severity::kInfo) return std::nullopt;
  if (m.wiring) {
    if (f.kind == kind::kHang) return "stuck with peers wired by groups created in another order";
    if (f.kind == kind::kRankDied)
      return "failed with peers wired by groups created in another order";
    return std::nullopt;
  }
  if (m.p2p) return MessageConsequence(m, f);
  if (f.kind == kind::kRankDied) {
    if (const auto w = follow_on::WaitingIn(f); w && InOrAfter(m, w->first, w->second))
      return "left in the mismatched collective";
    // Parted streams end when the ranks that parted run out of collectives: they finish (or
    // stop) while the others wait in one they never issue, and fail when the peers go.
    if (m.parted_at && f.step.value_or(m.step) >= m.step && !f.ranks.empty() &&
        std::none_of(f.ranks.begin(), f.ranks.end(), [&](int r) {
          return std::count(m.cause.culprits.begin(), m.cause.culprits.end(), r) > 0;
        }))
      return "left waiting in a collective the ranks that parted never issued";
    if (follow_on::StoppedBySignal(f) && f.step.value_or(m.step) >= m.step)
      return "stopped after the mismatch failed the job";
    return std::nullopt;
  }
  if (f.kind == kind::kHang) {
    const auto pg = follow_on::IntMember(f.evidence, "pg");
    const auto seq = follow_on::IntMember(f.evidence, "seq");
    if (pg && seq && InOrAfter(m, *pg, *seq)) return "stuck because of the mismatch";
  }
  return std::nullopt;
}

class MismatchFollowOnPass : public FindingsPass {
 public:
  std::string_view name() const override { return "mismatch-follow-on"; }

  void Apply(const RunContext&, std::vector<Finding>* findings) const override {
    std::vector<Mismatch> mismatches;
    for (const Finding& f : *findings)
      if (auto m = MismatchOf(f)) mismatches.push_back(std::move(*m));
    for (const Mismatch& m : mismatches)
      for (Finding& f : *findings)
        if (const auto why = Consequence(m, f)) Mark(m, *why, &f);
  }

 private:
  static void Mark(const Mismatch& m, const std::string& why, Finding* f) {
    const bool one = m.cause.culprits.size() == 1;
    const std::string who = (one ? "rank " : "ranks ") + FormatRankRanges(m.cause.culprits);
    // With no majority nobody issued "another" collective: the ranks split.
    const std::string ranks = "ranks " + FormatRankRanges(m.cause.culprits);
    std::string what;
    const trace::JsonValue* text = m.parted_at ? m.parted_at->Find("text") : nullptr;
    if (text && text->kind() == trace::JsonValue::Kind::kString)
      what = text->as_string();
    else if (m.wiring)
      what = m.majority ? who + " created its process groups in another order"
                        : ranks + " created their process groups in different orders";
    else if (m.p2p)
      what = m.majority ? who + " sent messages its peers did not expect there"
                        : ranks + " disagree on a message's size there, with no majority";
    else if (m.per_peer)
      what = m.majority ? who + " sent sizes its peers did not expect there"
                        : ranks + " disagree on their per-peer sizes there, with no majority";
    else
      what = m.majority ? who + " issued another collective there"
                        : ranks + " issued different collectives there, with no majority";
    follow_on::MarkFollowOn(
        m.cause,
        "a follow-on of the collective mismatch at " + m.cause.subject + ": " + why + " (" + what +
            ")",
        "A consequence, not a cause: the ranks issued different collectives at " + m.cause.subject +
            " and the backend " + (f->kind == kind::kHang ? "waited" : "failed") +
            " there. Read the collective-mismatch finding for what each rank issued.",
        f);
    if (m.parted_at) f->evidence.Set("parted_at", *m.parted_at);
  }
};

}  // namespace

std::unique_ptr<FindingsPass> CreateMismatchFollowOnPass() {
  return std::make_unique<MismatchFollowOnPass>();
}

}  // namespace dsdiag::analyzers
