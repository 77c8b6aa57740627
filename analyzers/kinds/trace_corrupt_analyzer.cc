// trace-corrupt: damage the reader met in a rank's trace, reported instead of aborting.
//
// Input: the loader's excluded files (RunContext::excluded) and each rank's read issues
// (RankEnd). A reader issue looks like
//   rank-00001.jsonl:7:1: expected a JSON object, found "{\"type\":\"st"
// and says where (file:line:column), what the format requires there and an excerpt of
// what was found. Severity follows what the damage costs the analysis:
//   error    the file was left out: no valid header, another run's run_id, another schema
//            major, or a rank outside the world size;
//   warning  lines in the middle of the file were skipped (their records are lost to
//            every other analyzer);
//   info     only the last line is cut short — what a killed writer leaves behind.
// One finding per file; subject is the file name.
//
// Flight dumps (RunContext::excluded_dumps, and the usable ones with skipped entries) are
// warnings: the hang and rank-died analyses go on without what they lost.
#include <algorithm>
#include <string>

#include "analyzers/framework/analyzer_factories.h"
#include "analyzers/framework/finding_kinds.h"

namespace dsdiag::analyzers {
namespace {

using trace::JsonValue;

constexpr size_t kMaxExamples = 5;

// The issue as the reader wrote it, naming the file as findings do (its name, not its path).
std::string IssueText(const std::string& file_name, trace::LocatedIssue issue) {
  issue.file = file_name;
  return issue.ToString();
}

const char* ReasonName(ExcludedFile::Reason reason) {
  switch (reason) {
    case ExcludedFile::Reason::kNoHeader:
      return "no-header";
    case ExcludedFile::Reason::kForeignRunId:
      return "foreign-run-id";
    case ExcludedFile::Reason::kSchemaMajor:
      return "schema-major";
    case ExcludedFile::Reason::kRankOutOfRange:
      return "rank-out-of-range";
  }
  return "no-header";
}

// The reader quotes excerpts as '...'; a summary reads better without.
std::string Unquoted(const std::string& s) {
  if (s.size() >= 2 && s.front() == '\'' && s.back() == '\'') return s.substr(1, s.size() - 2);
  return s;
}

std::string ExcludedSummary(const ExcludedFile& e) {
  switch (e.reason) {
    case ExcludedFile::Reason::kNoHeader:
      return e.file_name + " has no valid header on line 1; the file was left out";
    case ExcludedFile::Reason::kForeignRunId:
      return e.file_name + " belongs to another run (run_id " + e.issue.found +
             "); the file was left out";
    case ExcludedFile::Reason::kSchemaMajor:
      return e.file_name + " uses another trace schema (" + Unquoted(e.issue.found) +
             "); the file was left out";
    case ExcludedFile::Reason::kRankOutOfRange:
      return e.file_name + " is " + e.issue.found +
             ", outside the run's world size; the file was left out";
  }
  return e.file_name;
}

std::string ExcludedHint(ExcludedFile::Reason reason) {
  switch (reason) {
    case ExcludedFile::Reason::kNoHeader:
      return "The rank died before its header reached the disk, the file was overwritten, or "
             "it is not a dsdiag trace. The other ranks were analysed without it; if the rank "
             "ran, look at the launcher's log for it.";
    case ExcludedFile::Reason::kForeignRunId:
    case ExcludedFile::Reason::kRankOutOfRange:
      return "A trace of another run was left in this directory (or two jobs share it). Give "
             "every run its own --out directory.";
    case ExcludedFile::Reason::kSchemaMajor:
      return "The file was written by a dsdiag with another trace format; analyse it with that "
             "version (see its header's versions.dsdiag).";
  }
  return "";
}

class TraceCorruptAnalyzer : public Analyzer {
 public:
  std::string_view name() const override { return kind::kTraceCorrupt; }
  bool wants_records() const override { return false; }

  void Begin(const RunContext& run) override {
    for (const auto& e : run.excluded) findings_.push_back(Excluded(e));
    for (const auto& e : run.excluded_dumps) findings_.push_back(ExcludedDump(e));
    for (const auto& d : run.flight_dumps) {
      if (d.dump.entries_skipped == 0) continue;
      findings_.push_back(BadDump(d.rank, d.file_name,
                                  "has " + std::to_string(d.dump.entries_skipped) +
                                      " malformed entries, left out (" +
                                      d.dump.first_entry_problem + ")",
                                  d.dump.first_entry_problem));
    }
  }

  void OnRankEnd(const RankInfo& rank, const RankEnd& end) override {
    if (end.issue_count == 0) return;
    findings_.push_back(end.issue_count == 1 && end.truncated_tail ? TruncatedTail(rank, end)
                                                                   : Malformed(rank, end));
  }

  void Finish(const RunContext&, std::vector<Finding>* findings) override {
    for (auto& f : findings_) findings->push_back(std::move(f));
    findings_.clear();
  }

 private:
  static Finding Base(int rank, const std::string& file_name, Severity severity) {
    Finding f;
    f.kind = std::string(kind::kTraceCorrupt);
    f.severity = severity;
    f.ranks = {rank};
    f.subject = file_name;
    f.evidence.Set("file", file_name);
    return f;
  }

  static Finding Excluded(const ExcludedFile& e) {
    Finding f = Base(e.rank, e.file_name, Severity::kError);
    f.summary = ExcludedSummary(e);
    f.evidence.Set("reason", ReasonName(e.reason));
    f.evidence.Set("line", e.issue.line);
    f.evidence.Set("column", e.issue.column);
    f.evidence.Set("expected", e.issue.expected);
    f.evidence.Set("found", e.issue.found);
    f.hint = ExcludedHint(e.reason);
    return f;
  }

  static Finding TruncatedTail(const RankInfo& rank, const RankEnd& end) {
    Finding f = Base(rank.rank, rank.file_name, Severity::kInfo);
    auto it = std::find_if(end.issues.begin(), end.issues.end(),
                           [](const trace::LocatedIssue& i) { return i.truncated_tail; });
    const int64_t line = it != end.issues.end() ? it->line : end.lines_read;
    const bool compressed = it != end.issues.end() && it->expected == "a whole zstd block";
    f.summary = rank.file_name +
                (compressed ? " ends inside a compressed block (after line "
                            : " ends in a partial line (line ") +
                std::to_string(line) + "): its writer stopped mid-record";
    f.evidence.Set("line", line);
    if (it != end.issues.end()) f.evidence.Set("found", it->found);
    f.evidence.Set("end_record", end.end_seen);
    f.hint =
        "A write that stopped half-way: the disk or quota filled up (the trainer then warns "
        "once on stderr), or the rank was killed in the middle of a large write. Only that "
        "last record is lost. See the rank-died finding for which it was.";
    return f;
  }

  static Finding Malformed(const RankInfo& rank, const RankEnd& end) {
    Finding f = Base(rank.rank, rank.file_name, Severity::kWarning);
    const int64_t malformed = end.issue_count - (end.truncated_tail ? 1 : 0);
    JsonValue examples = JsonValue::Array();
    int64_t first_line = 0;
    for (const auto& issue : end.issues) {
      if (issue.truncated_tail) continue;
      if (first_line == 0) first_line = issue.line;
      if (examples.elements().size() < kMaxExamples)
        examples.Push(IssueText(rank.file_name, issue));
    }
    f.summary = rank.file_name + ": " + std::to_string(malformed) + " malformed line" +
                (malformed == 1 ? "" : "s") + " skipped (first at line " +
                std::to_string(first_line) + ")";
    f.evidence.Set("malformed_lines", malformed);
    f.evidence.Set("lines_read", end.lines_read);
    f.evidence.Set("truncated_tail", end.truncated_tail);
    f.evidence.Set("examples", std::move(examples));
    f.hint =
        "Lines were damaged after they were written (disk full, two processes writing one "
        "file, an edit). Findings that need the skipped records may be missing: check the "
        "disk and that every rank writes its own --out file.";
    return f;
  }

  static Finding ExcludedDump(const ExcludedFlightDump& e) {
    switch (e.reason) {
      case ExcludedFlightDump::Reason::kUnreadable:
        return BadDump(e.rank, e.file_name, "is not a valid flight dump: " + e.issue.ToString(),
                       e.issue.ToString());
      case ExcludedFlightDump::Reason::kForeignRunId:
        return BadDump(e.rank, e.file_name,
                       "belongs to another run (run_id " + e.dump_run_id + ", not " + e.run_id +
                           "); it was left out",
                       "");
      case ExcludedFlightDump::Reason::kRankMismatch:
        return BadDump(e.rank, e.file_name,
                       "says it is rank " + std::to_string(e.dump_rank) +
                           ", its file name says rank " + std::to_string(e.rank) +
                           "; it was left out",
                       "");
    }
    return BadDump(e.rank, e.file_name, "was left out", "");
  }

  static Finding BadDump(int rank, const std::string& file_name, const std::string& what,
                         const std::string& issue) {
    Finding f;
    f.kind = std::string(kind::kTraceCorrupt);
    f.severity = Severity::kWarning;
    f.ranks = {rank};
    f.subject = file_name;
    f.summary = file_name + " " + what;
    f.evidence.Set("file", file_name);
    f.evidence.Set("flight_dump", true);
    if (!issue.empty()) f.evidence.Set("issue", issue);
    f.hint =
        "The hang analysis goes on without this dump. A dump is written whole under a "
        "temporary name, then renamed: a damaged one was edited, copied while being written, "
        "or comes from another tool; a foreign one is left over from an earlier run in the "
        "same directory (use a fresh --out per run).";
    return f;
  }

  std::vector<Finding> findings_;
};

}  // namespace

std::unique_ptr<Analyzer> CreateTraceCorruptAnalyzer() {
  return std::make_unique<TraceCorruptAnalyzer>();
}

}  // namespace dsdiag::analyzers
