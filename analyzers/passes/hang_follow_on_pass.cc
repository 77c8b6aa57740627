// The hang follow-on pass: when some ranks never entered a collective (a `hang` finding with
// culprits), the ranks that waited in it time out, fail or are stopped, and the rank-died
// analyzer reports each of them — one error per victim, the cause lost among them. This pass
// marks those findings `info` follow-ons of the hang, so that the screen shows one error for
// the hang (and the culprit's own findings, left as they are).
//
// A rank-died finding is a follow-on when, and only when:
//   - a hang finding names the stuck collective (evidence `pg`, `seq`) and has culprits
//     (`culprit_count` > 0: some rank never entered it; when every rank waits, the hang is
//     the transport's and each rank's timeout stays what it is);
//   - the rank-died finding says its ranks were left waiting in that same collective, or in
//     a later one of the same process group (evidence `waiting_in` {pg, seq}: the oldest
//     pending entry of the rank's last flight dump, or the collective its error record
//     names; a grouped finding carries it when all its ranks agree). A later one: a rank can
//     be done with the stuck collective before the others (a broadcast's root, one side of
//     an allreduce whose link was cut) and then wait in the next one for the same culprits;
//   - none of its ranks is a culprit of the hang, and it is a warning or an error.
// A culprit's own rank-died finding is a follow-on too when it only says the culprit was
// stopped by a stop signal (SIGTERM, SIGINT: evidence `signal`): that is the launcher
// tearing the hung job down, and the hang finding already says where the culprit was. A
// culprit that crashed (SIGSEGV, an error) keeps its error: then the crash is the cause.
// A culprit cut off from the others (the hang's evidence `cut_off`: it could not reach the
// store's host after its timeout) that timed out waiting in the stuck collective is a
// follow-on too: its timeout is what the cut did to it, and the hang finding names the cut.
// The finding keeps its kind, ranks, step and evidence; it gains `follow_on_of`
// {"kind":"hang","subject":...,"culprits":[...]} and says so in its summary and hint.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "analyzers/framework/finding_kinds.h"
#include "analyzers/framework/findings_pass.h"
#include "analyzers/passes/follow_on.h"

namespace dsdiag::analyzers {
namespace {

using trace::JsonValue;

// The collective a hang finding says progress stopped at, and who never entered it.
struct StuckCollective {
  int64_t pg = 0;
  int64_t seq = 0;
  std::string subject;
  std::vector<int> culprits;
  bool cut_off = false;  // the culprits entered the collective but lost the others
};

std::optional<StuckCollective> StuckOf(const Finding& f) {
  if (f.kind != kind::kHang) return std::nullopt;
  const auto pg = follow_on::IntMember(f.evidence, "pg");
  const auto seq = follow_on::IntMember(f.evidence, "seq");
  const auto culprits = follow_on::IntMember(f.evidence, "culprit_count");
  if (!pg || !seq || culprits.value_or(0) <= 0) return std::nullopt;
  const JsonValue* cut = f.evidence.Find("cut_off");
  return StuckCollective{*pg, *seq, f.subject.value_or(""), f.ranks, cut && cut->is_object()};
}

bool IsCulprit(const StuckCollective& stuck, int rank) {
  return std::find(stuck.culprits.begin(), stuck.culprits.end(), rank) != stuck.culprits.end();
}

// A culprit stopped by the launcher (or a user's Ctrl-C) once the job hung.
bool CulpritStopped(const Finding& f, const StuckCollective& stuck) {
  return follow_on::StoppedBySignal(f) &&
         std::all_of(f.ranks.begin(), f.ranks.end(), [&](int r) { return IsCulprit(stuck, r); });
}

bool WaitsInStuck(const Finding& f, const StuckCollective& stuck) {
  const auto waiting = follow_on::WaitingIn(f);
  return waiting && waiting->first == stuck.pg && waiting->second == stuck.seq;
}

// Waited in the stuck collective or a later one of its group, and is no culprit.
bool WaitedIn(const Finding& f, const StuckCollective& stuck) {
  const auto waiting = follow_on::WaitingIn(f);
  return waiting && waiting->first == stuck.pg && waiting->second >= stuck.seq &&
         std::none_of(f.ranks.begin(), f.ranks.end(), [&](int r) { return IsCulprit(stuck, r); });
}

// A cut-off culprit that timed out in the collective it was cut off in.
bool CutOffTimedOut(const Finding& f, const StuckCollective& stuck) {
  return stuck.cut_off && WaitsInStuck(f, stuck) && !f.ranks.empty() &&
         std::all_of(f.ranks.begin(), f.ranks.end(), [&](int r) { return IsCulprit(stuck, r); });
}

void SetFollowOnOf(const StuckCollective& stuck, Finding* f) {
  follow_on::SetCause({std::string(kind::kHang), stuck.subject, stuck.culprits}, f);
}

void MarkCulpritStopped(const StuckCollective& stuck, Finding* f) {
  f->severity = Severity::kInfo;
  f->summary += "; stopped after it hung the job: see the hang finding";
  SetFollowOnOf(stuck, f);
  f->hint =
      "The stop signal came from the launcher (or a user) once the others timed out: the "
      "cause is what the hang finding names, that this rank never entered " +
      (stuck.subject.empty() ? std::string("the collective") : stuck.subject) + ".";
}

void MarkCutOff(const StuckCollective& stuck, Finding* f) {
  f->severity = Severity::kInfo;
  f->summary += "; a follow-on of the hang: its host was cut off from the others";
  SetFollowOnOf(stuck, f);
  f->hint = "The rank waited in " +
            (stuck.subject.empty() ? std::string("the collective") : stuck.subject) +
            " until it timed out because its link to the other ranks went down: the hang finding "
            "says so. Check that host's network, not this rank's code.";
}

void MarkFollowOn(const StuckCollective& stuck, Finding* f) {
  const bool one = stuck.culprits.size() == 1;
  const std::string culprits = (one ? "rank " : "ranks ") + FormatRankRanges(stuck.culprits);
  f->severity = Severity::kInfo;
  const std::string subject = stuck.subject.empty() ? "the collective" : stuck.subject;
  SetFollowOnOf(stuck, f);
  if (stuck.cut_off) {
    f->summary += "; a follow-on of the hang: " + culprits + (one ? " was" : " were") +
                  " cut off from the others in " + subject;
    f->hint =
        "A victim, not a cause: the rank waited in the collective the hang finding names "
        "until it gave up, because the link to " +
        culprits + " went down. Read the hang finding: check the network of " +
        (one ? "that rank's" : "those ranks'") + " host.";
    return;
  }
  f->summary += "; a follow-on of the hang: " + culprits + " never entered " + subject;
  f->hint =
      "A victim, not a cause: the rank waited in the collective the hang finding names "
      "until it gave up or was stopped, because " +
      culprits + (one ? " was" : " were") +
      " never going to join it. Read the hang finding and find out what the culprits "
      "were doing instead.";
}

class HangFollowOnPass : public FindingsPass {
 public:
  std::string_view name() const override { return "hang-follow-on"; }

  void Apply(const RunContext&, std::vector<Finding>* findings) const override {
    std::vector<StuckCollective> hangs;
    for (const Finding& f : *findings)
      if (auto stuck = StuckOf(f)) hangs.push_back(std::move(*stuck));
    for (const StuckCollective& stuck : hangs)
      for (Finding& f : *findings) {
        if (WaitedIn(f, stuck)) MarkFollowOn(stuck, &f);
        if (CutOffTimedOut(f, stuck)) MarkCutOff(stuck, &f);
        if (CulpritStopped(f, stuck)) MarkCulpritStopped(stuck, &f);
      }
  }
};

}  // namespace

std::unique_ptr<FindingsPass> CreateHangFollowOnPass() {
  return std::make_unique<HangFollowOnPass>();
}

}  // namespace dsdiag::analyzers
