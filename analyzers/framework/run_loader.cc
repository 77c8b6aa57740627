#include "analyzers/framework/run_loader.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>
#include <optional>
#include <system_error>
#include <utility>

#include "analyzers/framework/input_error.h"
#include "trace/flight_dump.h"
#include "trace/record_types.h"
#include "trace/run_files.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {
namespace {

namespace fs = std::filesystem;

struct TraceFile {
  int rank = 0;  // from the file name
  std::string path;
  std::string file_name;
  std::optional<trace::TraceHeader> header;
  trace::LocatedIssue header_issue;  // why `header` is empty
};

struct DumpFile {
  int rank = 0;  // from the file name
  std::string path;
  std::string file_name;
};

struct DirListing {
  std::vector<TraceFile> traces;  // by rank
  std::vector<DumpFile> dumps;    // by rank
};

DirListing ListRunDir(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (ec || !fs::exists(st)) throw RunInputError("run directory '" + dir + "' does not exist");
  if (!fs::is_directory(st)) throw RunInputError("'" + dir + "' is not a directory");

  DirListing listing;
  fs::directory_iterator it(dir, ec);
  if (ec) throw RunInputError("cannot list run directory '" + dir + "': " + ec.message());
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    if (ec) throw RunInputError("cannot list run directory '" + dir + "': " + ec.message());
    const std::string name = it->path().filename().string();
    if (!it->is_regular_file(ec)) continue;
    if (auto rank = trace::ParseRankTraceFileName(name)) {
      listing.traces.push_back({*rank, it->path().string(), name, std::nullopt, {}});
    } else if (auto dump_rank = trace::ParseFlightDumpFileName(name)) {
      listing.dumps.push_back({*dump_rank, it->path().string(), name});
    }
  }
  auto by_rank = [](const auto& a, const auto& b) {
    return std::tie(a.rank, a.file_name) < std::tie(b.rank, b.file_name);
  };
  std::sort(listing.traces.begin(), listing.traces.end(), by_rank);
  std::sort(listing.dumps.begin(), listing.dumps.end(), by_rank);
  if (listing.traces.empty())
    throw RunInputError(
        "no rank traces (rank-<R>.jsonl or rank-<R>.jsonl.zst) and no PyTorch "
        "Flight Recorder dumps (<prefix><rank>, e.g. nccl_trace_rank_0) in run "
        "directory '" +
        dir + "'");
  return listing;
}

// "rank-1.jsonl" cannot exist (5 digits at least) but "rank-00001.jsonl" and
// "rank-000001.jsonl" can, and so can a plain and a compressed copy: two files for one rank
// make every cross-rank diff ambiguous.
void CheckDuplicateNames(const std::vector<TraceFile>& traces) {
  for (size_t i = 1; i < traces.size(); ++i) {
    if (traces[i].rank == traces[i - 1].rank)
      throw RunInputError(
          trace::DuplicateRankTraceError(traces[i].rank, traces[i - 1].path, traces[i].path));
  }
}

trace::LocatedIssue LineOneIssue(const std::string& path, std::string expected, std::string found) {
  trace::LocatedIssue issue;
  issue.file = path;
  issue.line = 1;
  issue.column = 1;
  issue.expected = std::move(expected);
  issue.found = std::move(found);
  return issue;
}

void ReadHeader(TraceFile* file) {
  std::string error;
  auto reader = trace::TraceReader::Open(file->path, &error);
  if (!reader) throw RunInputError("cannot read trace '" + file->path + "': " + error);
  const auto& header = reader->ReadHeader();
  if (!header) {
    // The reader's own issue says what line 1 held; an empty file leaves none.
    const auto& issues = reader->issues();
    file->header_issue = issues.empty() ? LineOneIssue(file->path, "a header record", "end of file")
                                        : issues.front();
    return;
  }
  // Kept whatever its schema: Admit() tells "other schema" from "no header".
  file->header = header;
}

// Equal and of the same kinds throughout: 2 and 2.0 compare equal as JsonValues but are not
// the same value to share.
bool Identical(const trace::JsonValue& a, const trace::JsonValue& b) {
  using Kind = trace::JsonValue::Kind;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kNull:
      return true;
    case Kind::kBool:
    case Kind::kInt:
      return a.as_int() == b.as_int();
    case Kind::kDouble:
      return a.ToJson() == b.ToJson();
    case Kind::kString:
      return a.as_string() == b.as_string();
    case Kind::kArray:
      return std::equal(a.elements().begin(), a.elements().end(), b.elements().begin(),
                        b.elements().end(), Identical);
    case Kind::kObject:
      return std::equal(a.members().begin(), a.members().end(), b.members().begin(),
                        b.members().end(), [](const auto& x, const auto& y) {
                          return x.first == y.first && Identical(x.second, y.second);
                        });
  }
  return false;
}

// The ranks of a run are usually configured alike: a header whose config or sections are
// those of the previous rank's takes that rank's copy, which the two then share (JsonValue
// copies on write). At 131,072 ranks this is ~1 KB a rank (issue 35).
void ShareWithPrevious(const trace::TraceHeader& previous, trace::TraceHeader* header) {
  if (Identical(header->config, previous.config)) header->config = previous.config;
  if (Identical(header->sections, previous.sections)) header->sections = previous.sections;
}

void ReadHeaders(std::vector<TraceFile>* traces) {
  const trace::TraceHeader* previous = nullptr;
  for (auto& t : *traces) {
    ReadHeader(&t);
    if (!t.header) continue;
    if (previous) ShareWithPrevious(*previous, &*t.header);
    previous = &*t.header;
  }
}

void CheckRankClaims(const std::vector<TraceFile>& traces) {
  std::map<int, const TraceFile*> by_name;
  for (const auto& t : traces) by_name[t.rank] = &t;
  for (const auto& t : traces) {
    if (!t.header || !trace::IsReadableSchema(t.header->schema)) continue;
    if (t.header->rank == t.rank) continue;
    std::string message = t.path + ":1: header says rank " + std::to_string(t.header->rank) +
                          " but the file name says rank " + std::to_string(t.rank);
    auto other = by_name.find(t.header->rank);
    if (other != by_name.end())
      message +=
          "; '" + other->second->path + "' also claims rank " + std::to_string(t.header->rank);
    throw RunInputError(message);
  }
}

// The value most headers hold; a tie goes to the value of the lowest rank.
template <typename T, typename Get>
std::optional<T> Majority(const std::vector<TraceFile>& traces, Get get) {
  std::vector<std::pair<T, int>> counts;  // in order of first appearance (by rank)
  for (const auto& t : traces) {
    if (!t.header || !trace::IsReadableSchema(t.header->schema)) continue;
    const T value = get(*t.header);
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto& c) { return c.first == value; });
    if (it == counts.end()) {
      counts.emplace_back(value, 1);
    } else {
      ++it->second;
    }
  }
  if (counts.empty()) return std::nullopt;
  auto best = counts.begin();
  for (auto it = counts.begin(); it != counts.end(); ++it)
    if (it->second > best->second) best = it;
  return best->first;
}

std::string Quoted(const std::string& s) { return "\"" + s + "\""; }

// Decides whether a trace takes part; fills *excluded when not.
bool Admit(const TraceFile& t, const RunContext& run, ExcludedFile* excluded) {
  excluded->rank = t.rank;
  excluded->path = t.path;
  excluded->file_name = t.file_name;
  if (!t.header) {
    // The reader refuses a header of another schema major; its issue says "schema ...".
    const bool schema = t.header_issue.expected.rfind("schema", 0) == 0;
    excluded->reason =
        schema ? ExcludedFile::Reason::kSchemaMajor : ExcludedFile::Reason::kNoHeader;
    excluded->issue = t.header_issue;
    return false;
  }
  if (!trace::IsReadableSchema(t.header->schema)) {
    excluded->reason = ExcludedFile::Reason::kSchemaMajor;
    excluded->issue = LineOneIssue(t.path, "schema " + Quoted(std::string(trace::kSchema)),
                                   Quoted(t.header->schema));
    return false;
  }
  if (t.header->run_id != run.run_id) {
    excluded->reason = ExcludedFile::Reason::kForeignRunId;
    excluded->issue = LineOneIssue(t.path, "run_id " + Quoted(run.run_id) + " (most ranks')",
                                   Quoted(t.header->run_id));
    return false;
  }
  if (t.rank >= run.world_size) {
    excluded->reason = ExcludedFile::Reason::kRankOutOfRange;
    excluded->issue =
        LineOneIssue(t.path, "a rank below world_size " + std::to_string(run.world_size),
                     "rank " + std::to_string(t.rank));
    return false;
  }
  return true;
}

// Parses one dump and files it under flight_dumps or excluded_dumps: a dump is used when it
// parses, belongs to the run (a dump without run_id is given the benefit of the doubt) and
// is the rank its file name says.
void LoadDump(const DumpFile& d, RunContext* run) {
  ExcludedFlightDump excluded;
  excluded.rank = d.rank;
  excluded.path = d.path;
  excluded.file_name = d.file_name;
  std::optional<trace::FlightDump> dump = trace::ReadFlightDumpFile(d.path, &excluded.issue);
  if (!dump) {
    excluded.reason = ExcludedFlightDump::Reason::kUnreadable;
  } else if (!run->run_id.empty() && !dump->run_id.empty() && dump->run_id != run->run_id) {
    excluded.reason = ExcludedFlightDump::Reason::kForeignRunId;
    excluded.dump_run_id = dump->run_id;
    excluded.run_id = run->run_id;
  } else if (dump->rank != d.rank) {
    excluded.reason = ExcludedFlightDump::Reason::kRankMismatch;
    excluded.dump_rank = dump->rank;
  } else {
    run->flight_dumps.push_back({d.rank, d.path, d.file_name, std::move(*dump)});
    return;
  }
  run->excluded_dumps.push_back(std::move(excluded));
}

}  // namespace

RunContext LoadRun(const std::string& dir) {
  DirListing listing = ListRunDir(dir);
  CheckDuplicateNames(listing.traces);
  ReadHeaders(&listing.traces);
  CheckRankClaims(listing.traces);

  RunContext run;
  run.dir = dir;
  run.world_size = Majority<int>(listing.traces, [](const trace::TraceHeader& h) {
                     return h.world_size;
                   }).value_or(0);
  run.run_id = Majority<std::string>(listing.traces, [](const trace::TraceHeader& h) {
                 return h.run_id;
               }).value_or("");

  std::vector<bool> has_file(static_cast<size_t>(std::max(run.world_size, 0)), false);
  // Reserved: growing it would hold two copies of every rank's header for a moment.
  run.ranks.reserve(listing.traces.size());
  for (auto& t : listing.traces) {
    if (t.rank < run.world_size) has_file[static_cast<size_t>(t.rank)] = true;
    ExcludedFile excluded;
    if (!Admit(t, run, &excluded)) {
      run.excluded.push_back(std::move(excluded));
      continue;
    }
    run.ranks.push_back({t.rank, std::move(t.path), std::move(t.file_name), std::move(*t.header)});
    run.ranks_found.push_back(t.rank);
  }
  for (int r = 0; r < run.world_size; ++r)
    if (!has_file[static_cast<size_t>(r)]) run.missing_ranks.push_back(r);
  for (const DumpFile& d : listing.dumps) LoadDump(d, &run);
  return run;
}

}  // namespace dsdiag::analyzers
