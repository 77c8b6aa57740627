#include "analyzers/torch_fr/fr_run.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "analyzers/framework/input_error.h"
#include "trace/torch_fr/torch_fr_files.h"
#include "trace/torch_fr/torch_fr_keys.h"

namespace dsdiag::analyzers::torch_fr {
namespace {

using trace::TorchFrEntry;

// The set of dumps to analyse: the given prefix's, else the largest (ties: the first name).
const trace::TorchFrFileGroup* ChooseGroup(const trace::TorchFrFindResult& found) {
  const trace::TorchFrFileGroup* best = nullptr;
  for (const auto& g : found.groups)
    if (best == nullptr || g.files.size() > best->files.size()) best = &g;
  return best;
}

// The innermost frame outside torch's own files (the job's line that issued the op), else
// the innermost; "" without frames (JSON dumps).
std::string WhereOf(const TorchFrEntry& e) {
  if (e.frames.empty()) return "";
  const trace::TorchFrFrame* chosen = &e.frames.front();
  for (const trace::TorchFrFrame& f : e.frames) {
    if (f.filename.find("/torch/") == std::string::npos) {
      chosen = &f;
      break;
    }
  }
  return chosen->filename + ":" + std::to_string(chosen->line) + " in " + chosen->name;
}

std::string SizesText(const TorchFrEntry& e) {
  std::string text = "[";
  for (size_t i = 0; i < e.input_sizes.size(); ++i) {
    text += i ? ",[" : "[";
    for (size_t d = 0; d < e.input_sizes[i].size(); ++d)
      text += (d ? "," : "") + std::to_string(e.input_sizes[i][d]);
    text += "]";
  }
  return text + "]";
}

std::string DtypesText(const TorchFrEntry& e) {
  std::string text;
  for (size_t i = 0; i < e.input_dtypes.size(); ++i) text += (i ? "," : "") + e.input_dtypes[i];
  return text;
}

// pg_status's sequence, where it counts what collective_seq_id counts: torch 2.13's Gloo
// counts every op of the group in it, sends and recvs too (a rank that sent twice and
// reduced six times shows last_enqueued_collective 8 beside collective_seq_id 6), so it is
// used only when its last enqueued op is the group's last recorded collective.
std::unordered_map<int64_t, const trace::TorchFrGroupStatus*> UsableStatus(
    const trace::TorchFrDump& dump) {
  std::unordered_map<int64_t, int64_t> last_seq;
  for (const TorchFrEntry& e : dump.entries) {
    const std::string_view op = e.op();
    if (e.is_p2p.value_or(op == "send" || op == "recv")) continue;
    int64_t& last = last_seq.emplace(e.pg_id, e.collective_seq_id).first->second;
    last = std::max(last, e.collective_seq_id);
  }
  std::unordered_map<int64_t, const trace::TorchFrGroupStatus*> out;
  for (const auto& [pg_id, seq] : last_seq)
    if (const trace::TorchFrGroupStatus* s = dump.FindStatus(pg_id))
      if (s->last_enqueued && *s->last_enqueued == seq) out.emplace(pg_id, s);
  return out;
}

bool DoneByItsDump(const std::unordered_map<int64_t, const trace::TorchFrGroupStatus*>& status,
                   const TorchFrEntry& e, int64_t seq, bool p2p) {
  if (e.state == trace::TorchFrState::kCompleted) return true;
  // Retired: no longer watched. Gloo has no events, its finished ops stay "scheduled" and
  // are retired; a backend with events (NCCL) retires an op it did not see complete only
  // when the op timed out.
  if (e.retired.value_or(false) && e.backend() == "gloo") return true;
  if (p2p) return false;  // pg_status has no p2p sequence
  const auto it = status.find(e.pg_id);
  return it != status.end() && it->second->last_completed && *it->second->last_completed >= seq;
}

class Compactor {
 public:
  explicit Compactor(FrRun* run) : run_(run) {}

  FrRankDump Compact(int rank, std::string file_name, const trace::TorchFrDump& dump) {
    FrRankDump out;
    out.rank = rank;
    out.file_name = std::move(file_name);
    out.version = dump.version;
    out.entries_skipped = dump.entries_skipped;
    out.entries.reserve(dump.entries.size());
    if (!dump.entries.empty()) out.first_record_id = dump.entries.front().record_id;
    status_ = UsableStatus(dump);
    std::vector<bool> markers;
    markers.reserve(dump.entries.size());
    for (const TorchFrEntry& e : dump.entries) {
      out.entries.push_back(Entry(dump, e));
      markers.push_back(e.is_coalesced_marker());
    }
    MergeCoalesced(markers, &out.entries);
    for (const trace::TorchFrGroup& g : dump.groups)
      most_ranks_ = std::max(most_ranks_, static_cast<int>(g.ranks.size()));
    return out;
  }
  int most_ranks() const { return most_ranks_; }

 private:
  FrEntry Entry(const trace::TorchFrDump& dump, const TorchFrEntry& e) {
    FrEntry c;
    const std::string_view op = e.op();
    // Before format 2.0 no is_p2p: a send or recv is one (and counts in seq_id).
    const bool p2p = e.is_p2p.value_or(op == "send" || op == "recv");
    c.seq = p2p ? e.p2p_seq_id.value_or(e.collective_seq_id) : e.collective_seq_id;
    c.numel = e.input_numel();
    if (e.time_created_ns) c.created_ns = *e.time_created_ns;
    if (e.time_discovered_completed_ns) c.completed_ns = *e.time_discovered_completed_ns;
    c.group = Group(dump, e, p2p);
    c.op = run_->strings.Intern(op.empty() ? std::string_view(e.profiling_name) : op);
    c.profiling_name = run_->strings.Intern(e.profiling_name);
    c.sizes = run_->strings.Intern(SizesText(e));
    c.dtypes = run_->strings.Intern(DtypesText(e));
    const std::string where = WhereOf(e);
    c.where = run_->strings.Intern(where);
    // Ranks may run the job from different directories: the file's name and line compare.
    c.site = run_->strings.Intern(ShortWhere(where));
    c.op_detail = run_->strings.Intern(e.op_detail());
    c.state = e.state;
    c.done_by_dump = DoneByItsDump(status_, e, c.seq, p2p);
    return c;
  }

  // Coalesced groups: the entries of one group sharing a sequence number, or closed by a
  // marker. Before format 2.7 a group of collectives is its marker alone (empty sizes); from
  // 2.7 its ops come first. NCCL records the ops without events: the marker says whether the
  // group completed.
  void MergeCoalesced(const std::vector<bool>& markers, std::vector<FrEntry>* entries) {
    std::map<std::pair<int32_t, int64_t>, std::vector<size_t>> at;
    for (size_t i = 0; i < entries->size(); ++i)
      at[{(*entries)[i].group, (*entries)[i].seq}].push_back(i);
    std::vector<bool> drop(entries->size(), false);
    for (const auto& [key, indices] : at) {
      const FrEntry* marker = nullptr;
      std::vector<size_t> members;
      for (size_t i : indices) {
        if (markers[i])
          marker = &(*entries)[i];
        else
          members.push_back(i);
      }
      if (marker == nullptr && members.size() < 2) continue;
      const bool p2p = run_->groups[key.first].p2p;
      if (p2p) {  // each op stays one, for the pairing; the marker tells when they completed
        for (size_t i : members) {
          FrEntry& m = (*entries)[i];
          if (marker == nullptr) continue;
          m.done_by_dump = m.done_by_dump || marker->done_by_dump;
          m.state = std::max(m.state, marker->state);
          if (marker->completed_ns != FrEntry::kNoTime) m.completed_ns = marker->completed_ns;
        }
        for (size_t i : indices)
          if (markers[i]) drop[i] = true;
        continue;
      }
      // A group of collectives: one entry, in the place of its first.
      FrEntry merged = (*entries)[members.empty() ? indices.front() : members.front()];
      std::string ops, sizes, dtypes;
      int64_t numel = 0;
      bool all_done = true;
      for (size_t i : members) {
        const FrEntry& m = (*entries)[i];
        ops += (ops.empty() ? "" : ",") + run_->Str(m.op);
        const std::string& s = run_->Str(m.sizes);  // "[[2],[3]]": its shapes
        if (s.size() > 2) sizes += (sizes.empty() ? "" : ",") + s.substr(1, s.size() - 2);
        const std::string& d = run_->Str(m.dtypes);
        if (!d.empty()) dtypes += (dtypes.empty() ? "" : ",") + d;
        numel += m.numel;
        all_done = all_done && m.done_by_dump;
      }
      merged.op = run_->strings.Intern(ops.empty() ? "coalesced" : "coalesced(" + ops + ")");
      merged.sizes = run_->strings.Intern("[" + sizes + "]");
      merged.dtypes = run_->strings.Intern(dtypes);
      merged.numel = numel;
      merged.coalesced = true;
      if (marker != nullptr) {
        merged.done_by_dump = marker->done_by_dump || (!members.empty() && all_done);
        merged.state = marker->state;
        merged.completed_ns = marker->completed_ns;
        if (run_->Str(merged.where).empty()) {
          merged.where = marker->where;
          merged.site = marker->site;
        }
      } else {
        merged.done_by_dump = all_done;
      }
      (*entries)[indices.front()] = merged;
      for (size_t i = 1; i < indices.size(); ++i) drop[indices[i]] = true;
    }
    size_t kept = 0;
    for (size_t i = 0; i < entries->size(); ++i)
      if (!drop[i]) (*entries)[kept++] = (*entries)[i];
    entries->resize(kept);
  }

  int32_t Group(const trace::TorchFrDump& dump, const TorchFrEntry& e, bool p2p) {
    // No process_group before format 2.0: the pg_id, alike on every rank then.
    const std::string name = e.pg_name.empty() ? std::to_string(e.pg_id) : e.pg_name;
    const auto key = std::make_pair(name, p2p);
    auto it = groups_.find(key);
    if (it == groups_.end()) {
      it = groups_.emplace(key, static_cast<int32_t>(run_->groups.size())).first;
      run_->groups.push_back(FrGroupName{name, e.pg_desc, p2p, false, {}});
    }
    FrGroupName& g = run_->groups[it->second];
    if (g.desc.empty()) g.desc = e.pg_desc;
    g.is_default = g.is_default || e.pg_desc == trace::torch_fr_desc::kDefaultPg || name == "0";
    if (g.ranks.empty())
      if (const trace::TorchFrGroup* config = dump.FindGroup(name)) {
        g.ranks = config->ranks;
        std::sort(g.ranks.begin(), g.ranks.end());
      }
    return it->second;
  }

  FrRun* run_;
  std::unordered_map<int64_t, const trace::TorchFrGroupStatus*> status_;  // the dump's, usable
  std::map<std::pair<std::string, bool>, int32_t> groups_;
  int most_ranks_ = 0;
};

}  // namespace

int StringTable::Intern(std::string_view s) {
  const auto it = index_.find(std::string(s));
  if (it != index_.end()) return it->second;
  strings_.emplace_back(s);
  index_.emplace(strings_.back(), static_cast<int>(strings_.size() - 1));
  return static_cast<int>(strings_.size() - 1);
}

const FrRankDump* FrRun::DumpOf(int rank) const {
  const auto it = std::lower_bound(dumps.begin(), dumps.end(), rank,
                                   [](const FrRankDump& d, int r) { return d.rank < r; });
  return it != dumps.end() && it->rank == rank ? &*it : nullptr;
}

std::string ShortWhere(std::string_view where) {
  const size_t colon = where.rfind(':');
  const size_t slash = where.rfind('/', colon == std::string_view::npos ? where.size() : colon);
  return std::string(slash == std::string_view::npos ? where : where.substr(slash + 1));
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
  Compactor compactor(&run);
  for (const trace::TorchFrFile& file : group->files) {  // by rank
    trace::LocatedIssue issue;
    std::optional<trace::TorchFrDump> dump = trace::ReadTorchFrDumpFile(file.path, &issue);
    if (!dump) {
      issue.file = file.name;
      run.unreadable.push_back(std::move(issue));
      continue;
    }
    if (dump->entries_skipped > 0 && run.first_entry_problem.empty())
      run.first_entry_problem = file.name + ": " + dump->first_entry_problem;
    run.entries_skipped += dump->entries_skipped;
    run.dumps.push_back(compactor.Compact(file.rank, file.name, *dump));
  }
  for (const std::string& name : group->duplicate_names)
    run.unreadable.push_back(trace::LocatedIssue{name, 0, 0, "one dump per rank",
                                                 "a second file for a rank already read"});
  const int from_files = group->files.back().rank + 1;
  run.world_size = std::max(from_files, compactor.most_ranks());
  run.world_size_source = compactor.most_ranks() >= from_files ? "pg_config" : "file names";
  for (int r = 0; r < run.world_size; ++r)
    if (run.DumpOf(r) == nullptr) run.missing_ranks.push_back(r);
  return run;
}

}  // namespace dsdiag::analyzers::torch_fr
