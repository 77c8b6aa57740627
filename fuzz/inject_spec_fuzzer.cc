// Fuzzes the --inject parser (inject/inject_spec.h). Input: one byte picking the world size
// (-1: not yet known), then specs, one per line.
//
// A spec is either accepted, and then says what it was given (its kind's name before the
// ':', a rank inside the world, a positive ms), or rejected with an InjectSpecError whose
// message quotes the spec and says what was wrong. Any other exception is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "inject/inject_spec.h"

namespace {

using dsdiag::inject::InjectPlan;
using dsdiag::inject::InjectSpec;
using dsdiag::inject::InjectSpecError;

// Specs come from argv, which cannot hold a NUL: a NUL ends a spec like a newline does.
std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t nl = std::min(text.find_first_of(std::string_view("\n\0", 2), begin), text.size());
    lines.emplace_back(text.substr(begin, nl - begin));
    begin = nl + 1;
  }
  return lines;
}

void CheckAccepted(const InjectSpec& spec, std::string_view text, int world_size) {
  FUZZ_CHECK(spec.text == text, "spec text changed");
  const std::string_view name = text.substr(0, text.find(':'));
  FUZZ_CHECK(dsdiag::inject::KindName(spec.kind) == name, "kind name differs from the text");
  if (spec.rank) {
    FUZZ_CHECK(*spec.rank >= 0, "negative rank accepted");
    FUZZ_CHECK(world_size < 0 || *spec.rank < world_size, "rank %d accepted for %d ranks",
               *spec.rank, world_size);
  }
  FUZZ_CHECK(!spec.step || *spec.step >= 0, "negative step accepted");
  FUZZ_CHECK(!spec.ms || *spec.ms > 0, "ms <= 0 accepted");
}

void CheckRejected(const InjectSpecError& e, std::string_view text) {
  const std::string prefix = "--inject " + std::string(text) + ": ";
  const std::string_view what = e.what();
  FUZZ_CHECK(what.rfind(prefix, 0) == 0 && what.size() > prefix.size(),
             "error does not quote the spec and say why: %s", e.what());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int world_size = static_cast<int>(data[0]) - 1;
  const std::vector<std::string> texts =
      SplitLines(std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1));
  size_t accepted = 0;
  for (const std::string& text : texts) {
    try {
      CheckAccepted(dsdiag::inject::ParseInjectSpec(text, world_size), text, world_size);
      ++accepted;
    } catch (const InjectSpecError& e) {
      CheckRejected(e, text);
    }
  }
  // The plan accepts exactly when every spec does.
  try {
    const InjectPlan plan = InjectPlan::Parse(texts, world_size);
    FUZZ_CHECK(accepted == texts.size() && plan.specs().size() == texts.size(),
               "plan accepted a rejected spec");
    for (const InjectSpec& spec : plan.specs()) {
      FUZZ_CHECK(plan.Find(spec.kind) != nullptr, "Find lost a kind");
      FUZZ_CHECK(plan.FindFor(spec.kind, spec.rank.value_or(0)) != nullptr, "FindFor lost a spec");
    }
  } catch (const InjectSpecError&) {
    FUZZ_CHECK(accepted < texts.size(), "plan rejected specs each accepted");
  }
  return 0;
}
