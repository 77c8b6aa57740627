#include "analyzers/torch_fr/fr_run.h"

#include <algorithm>

#include "analyzers/framework/input_error.h"
#include "trace/torch_fr/torch_fr_files.h"

namespace dsdiag::analyzers::torch_fr {
namespace {

// The set of dumps to analyse: the given prefix's, else the largest (ties: the first name).
const trace::TorchFrFileGroup* ChooseGroup(const trace::TorchFrFindResult& found) {
  const trace::TorchFrFileGroup* best = nullptr;
  for (const auto& g : found.groups)
    if (best == nullptr || g.files.size() > best->files.size()) best = &g;
  return best;
}

// The largest member list any dump's pg_config gives: the default group holds every rank.
int WorldSizeFromGroups(const std::vector<FrRankDump>& dumps) {
  size_t most = 0;
  for (const FrRankDump& d : dumps)
    for (const trace::TorchFrGroup& g : d.dump.groups) most = std::max(most, g.ranks.size());
  return static_cast<int>(most);
}

}  // namespace

const FrRankDump* FrRun::DumpOf(int rank) const {
  for (const FrRankDump& d : dumps)
    if (d.rank == rank) return &d;
  return nullptr;
}

std::optional<FrRun> LoadFrRun(const std::string& dir, const std::optional<std::string>& prefix) {
  trace::TorchFrFindOptions options;
  options.prefix = prefix;
  const trace::TorchFrFindResult found = trace::FindTorchFrDumps(dir, options);
  if (!found.error.empty()) throw RunInputError(found.error);
  const trace::TorchFrFileGroup* group = ChooseGroup(found);
  if (group == nullptr || group->files.empty()) return std::nullopt;

  FrRun run;
  run.dir = dir;
  run.prefix = group->prefix;
  for (const auto& g : found.groups)
    if (&g != group) run.other_prefixes.push_back(g.prefix);
  for (const trace::TorchFrFile& file : group->files) {
    trace::LocatedIssue issue;
    std::optional<trace::TorchFrDump> dump = trace::ReadTorchFrDumpFile(file.path, &issue);
    if (!dump) {
      issue.file = file.name;
      run.unreadable.push_back(std::move(issue));
      continue;
    }
    run.entries_skipped += dump->entries_skipped;
    run.dumps.push_back(FrRankDump{file.rank, file.name, std::move(*dump)});
  }
  for (const std::string& name : group->duplicate_names)
    run.unreadable.push_back(trace::LocatedIssue{name, 0, 0, "one dump per rank",
                                                 "a second file for a rank already read"});
  const int from_files = group->files.back().rank + 1;
  const int from_groups = WorldSizeFromGroups(run.dumps);
  run.world_size = std::max(from_files, from_groups);
  run.world_size_source = from_groups >= from_files ? "pg_config" : "file names";
  for (int r = 0; r < run.world_size; ++r)
    if (run.DumpOf(r) == nullptr) run.missing_ranks.push_back(r);
  return run;
}

}  // namespace dsdiag::analyzers::torch_fr
