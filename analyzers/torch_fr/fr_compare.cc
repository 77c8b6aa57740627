#include "analyzers/torch_fr/fr_compare.h"

#include <optional>
#include <set>
#include <string>
#include <utility>

#include "analyzers/framework/finding_kinds.h"
#include "analyzers/torch_fr/fr_groups.h"
#include "analyzers/torch_fr/fr_hang.h"
#include "analyzers/torch_fr/fr_mismatch.h"
#include "analyzers/torch_fr/fr_p2p.h"
#include "analyzers/torch_fr/fr_parting.h"

namespace dsdiag::analyzers::torch_fr {
namespace {

Finding Unreadable(const trace::LocatedIssue& issue) {
  Finding f;
  f.kind = std::string(kind::kTraceCorrupt);
  f.severity = Severity::kWarning;
  f.subject = issue.file;
  if (const std::optional<int> rank = trace::TorchFrRankFromFileName(issue.file))
    f.ranks.push_back(*rank);
  f.summary = "Flight Recorder dump " + issue.file + " left out: " + issue.ToString();
  f.evidence.Set("source", "torch-flight-recorder");
  f.evidence.Set("file", issue.file);
  f.evidence.Set("line", issue.line);
  f.evidence.Set("column", issue.column);
  f.evidence.Set("expected", issue.expected);
  f.evidence.Set("found", issue.found);
  f.hint = "the rank of this file counts as one without a dump";
  return f;
}

Finding SkippedEntries(const FrRun& run) {
  Finding f;
  f.kind = std::string(kind::kTraceCorrupt);
  f.severity = Severity::kInfo;
  f.summary = std::to_string(run.entries_skipped) +
              " malformed Flight Recorder entries were left out of the analysis";
  f.evidence.Set("source", "torch-flight-recorder");
  f.evidence.Set("entries_skipped", run.entries_skipped);
  f.evidence.Set("first_problem", run.first_entry_problem);
  for (const FrRankDump& d : run.dumps)
    if (d.entries_skipped > 0) f.ranks.push_back(d.rank);
  return f;
}

// A mismatch of op, size or dtype later in a group whose streams parted is the parting's
// consequence: its collectives were paired with the wrong ones.
void FollowParting(const FrParting& p, Finding* f) {
  const trace::JsonValue* group = f->evidence.Find("group");
  const trace::JsonValue* seq = f->evidence.Find("seq");
  if (f->kind != kind::kCollectiveMismatch || !group || !seq ||
      group->as_string() != p.group->name() || seq->as_int() <= p.seq)
    return;
  f->severity = Severity::kInfo;
  f->summary =
      "a follow-on of where the streams parted at seq " + std::to_string(p.seq) + ": " + f->summary;
  f->evidence.Set("follows_from", "parting at seq " + std::to_string(p.seq));
}

}  // namespace

std::vector<Finding> AnalyzeFrRun(const FrRun& run) {
  std::vector<Finding> findings;
  const std::vector<FrGroup> groups = BuildGroups(run);
  FindMismatches(run, groups, &findings);
  std::set<std::pair<std::string, int64_t>> mismatched;
  for (const Finding& f : findings) {
    const trace::JsonValue* group = f.evidence.Find("group");
    const trace::JsonValue* seq = f.evidence.Find("seq");
    if (group && seq) mismatched.insert({group->as_string(), seq->as_int()});
  }
  std::set<std::string> parted;
  for (const FrParting& p : FindPartings(run, groups)) {
    parted.insert(p.group->name());
    for (Finding& f : findings) FollowParting(p, &f);
    findings.push_back(PartingFinding(run, p));
  }
  FindHangs(run, groups, mismatched, parted, &findings);
  FindP2pFindings(run, groups, &findings);
  for (const trace::LocatedIssue& issue : run.unreadable) findings.push_back(Unreadable(issue));
  if (run.entries_skipped > 0) findings.push_back(SkippedEntries(run));
  return findings;
}

}  // namespace dsdiag::analyzers::torch_fr
