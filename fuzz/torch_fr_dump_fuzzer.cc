// Fuzzes the PyTorch Flight Recorder reader with one file's bytes: the pickle reader and the
// typed dump (trace/torch_fr/), pickle and JSON alike.
//
// Beyond "no crash, no sanitizer report, no read out of bounds", it checks the reader's
// promises: a rejected file yields one issue that names the file and says what was expected
// and what was found (a pickle's by byte, within the file; a JSON one by a line and column);
// an accepted dump's entries are well-formed and its rank is the file name's; whatever tree
// the pickle reader builds is plain JSON that reads back as the same tree.
#include <simdjson.h>

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "trace/json_from_dom.h"
#include "trace/torch_fr/pickle_reader.h"
#include "trace/torch_fr/torch_fr_dump.h"

namespace {

using dsdiag::trace::JsonValue;
using dsdiag::trace::LocatedIssue;
using dsdiag::trace::TorchFrDump;
using dsdiag::trace::TorchFrEntry;
using dsdiag::trace::TorchFrFormat;

constexpr char kName[] = "nccl_trace_rank_3";

void CheckIssue(const LocatedIssue& issue, std::string_view bytes) {
  FUZZ_CHECK(issue.file == kName, "issue names another file: %s", issue.file.c_str());
  FUZZ_CHECK(!issue.expected.empty() && !issue.found.empty(), "issue without text");
  if (issue.line == 0) {
    // A pickle (or an unreadable start): the byte it names lies within the file.
    // Pickle errors end in " at byte N"; the dump-level ones describe values instead.
    const size_t at = issue.found.rfind(" at byte ");
    const std::string_view tail =
        at == std::string::npos ? std::string_view() : std::string_view(issue.found).substr(at + 9);
    uint64_t byte = 0;
    const auto r = std::from_chars(tail.data(), tail.data() + tail.size(), byte);
    if (!tail.empty() && r.ec == std::errc() && r.ptr == tail.data() + tail.size()) {
      FUZZ_CHECK(byte <= bytes.size(), "issue at byte %llu of %zu",
                 static_cast<unsigned long long>(byte), bytes.size());
    }
  } else {
    FUZZ_CHECK(issue.column >= 1, "issue column %lld", static_cast<long long>(issue.column));
  }
}

void CheckEntry(const TorchFrEntry& e) {
  FUZZ_CHECK(!e.profiling_name.empty() || e.op().empty(), "op of an empty name");
  FUZZ_CHECK(e.backend().size() + e.op().size() <= e.profiling_name.size(), "name parts too long");
  FUZZ_CHECK(e.input_numel() >= 0 && e.output_numel() >= 0, "negative numel");
  (void)e.is_coalesced_marker();
  (void)e.op_detail();
  (void)dsdiag::trace::TorchFrStateName(e.state);
}

void CheckDump(const TorchFrDump& d, std::string_view bytes) {
  FUZZ_CHECK(d.rank == 3, "rank not from the file name");
  FUZZ_CHECK(d.entries_skipped >= 0, "negative skip count");
  FUZZ_CHECK((d.entries_skipped == 0) == d.first_entry_problem.empty(),
             "skip count and first problem disagree");
  FUZZ_CHECK(d.format == dsdiag::trace::SniffTorchFrFormat(bytes), "format not the sniffed one");
  for (const TorchFrEntry& e : d.entries) CheckEntry(e);
  (void)d.records_coalesced_collectives();
  for (const auto& g : d.groups) FUZZ_CHECK(d.FindGroup(g.key) != nullptr, "group not found");
}

// The pickle reader's tree is plain JSON: written and read back, it is the same tree.
void CheckPickleTree(std::string_view bytes) {
  dsdiag::trace::PickleError error;
  const auto tree = dsdiag::trace::ReadPickle(bytes, &error);
  if (!tree) {
    FUZZ_CHECK(!error.expected.empty() && !error.found.empty(), "pickle error without text");
    FUZZ_CHECK(error.offset <= bytes.size(), "pickle error at %zu of %zu", error.offset,
               bytes.size());
    return;
  }
  static simdjson::dom::parser parser;
  const std::string json = tree->ToJson();
  simdjson::dom::element reparsed;
  FUZZ_CHECK(!parser.parse(json).get(reparsed), "the tree's JSON does not parse: %s",
             json.substr(0, 200).c_str());
  FUZZ_CHECK(dsdiag::trace::ToJsonValue(reparsed) == *tree, "round trip changed %s",
             json.substr(0, 200).c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  LocatedIssue issue;
  const auto dump = dsdiag::trace::ParseTorchFrDump(kName, bytes, &issue);
  if (dump) {
    CheckDump(*dump, bytes);
  } else {
    CheckIssue(issue, bytes);
  }
  if (dsdiag::trace::SniffTorchFrFormat(bytes) == TorchFrFormat::kPickle) CheckPickleTree(bytes);
  return 0;
}
