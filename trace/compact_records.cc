#include "trace/compact_records.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "trace/json_line.h"
#include "trace/json_value.h"
#include "trace/record_types.h"
#include "trace/records/coll_record.h"
#include "trace/records/colls_record.h"
#include "trace/records/fp_record.h"
#include "trace/records/phase_record.h"
#include "trace/records/record_line.h"
#include "trace/records/step_record.h"

namespace dsdiag::trace {
namespace {

using CK = records::CollKeys;
using FK = records::FpKeys;
using SK = records::StepKeys;
// The per-phase arrays of a step record (in phase::kStepOrder), each with the object it
// stands for and its unit: v3's in ns, v4's in µs.
struct PhaseArray {
  const FieldKey* array;
  const FieldKey* object;
  int64_t ns_per_unit;
};
constexpr PhaseArray kPhaseArrays[] = {
    {&SK::phases, &SK::phases, 1}, {&SK::cpu, &SK::cpu, 1},
    {&SK::runq, &SK::runq, 1},     {&SK::phases_us, &SK::phases, 1000},
    {&SK::cpu_us, &SK::cpu, 1000}, {&SK::runq_us, &SK::runq, 1000},
};
// v3: the step members left out where they equal the previous step record's.
constexpr const FieldKey* kRepeated[] = {&SK::epoch, &SK::lr, &SK::samples, &SK::load};

// `line` without its member `,"key":"value"` (as the writer puts it: after another member,
// the value unescaped); false when the member is not spelt so. Found by its text, which
// costs a search where locating a value through the JSON syntax would cost a scan.
bool CutStringMember(std::string_view line, std::string_view key, std::string_view value,
                     std::string* out) {
  std::string needle = ",\"";
  needle.append(key).append("\":\"").append(value).push_back('"');
  const size_t at = line.find(needle);
  if (at == std::string_view::npos) return false;
  out->assign(line.substr(0, at));
  out->append(line.substr(at + needle.size()));
  return true;
}

// `,"gran":…,"h":[…]` of a fingerprint record: its last two members, as the writer puts
// them; empty when the record is spelt otherwise.
std::string_view HashMembers(std::string_view line) {
  const size_t at = line.rfind(",\"gran\":\"");
  if (at == std::string_view::npos || line.size() < at + 2 || line.back() != '}' ||
      line.find(",\"h\":[", at) == std::string_view::npos || line[line.size() - 2] != ']')
    return {};
  return line.substr(at, line.size() - 1 - at);
}

}  // namespace

CompactRecordExpander::Verdict CompactRecordExpander::Observe(const Record& r,
                                                              std::vector<std::string>* lines,
                                                              std::string* issue) {
  if (!on_) return Verdict::kDeliver;
  if (r.type_id() == rec_id::kCollective) {
    NoteCollective(r);
  } else if (r.type() == rec::kCollectiveRun) {
    return ExpandCollectives(r, lines, issue);
  } else if (r.type_id() == rec_id::kStep) {
    return ExpandStep(r, lines, issue);
  } else if (r.type_id() == rec_id::kFingerprint) {
    const auto what = r.Str(FK::what), why = r.Str(FK::why);
    if (what && why && (*what == records::fp_what::kGrad || *what == records::fp_what::kParam)) {
      if (*why != records::fp_why::kPreStep) {
        latest_fp_[std::string(*what)].assign(HashMembers(r.raw_line()));
      } else if (r.Has(FK::same)) {
        return ExpandPreStep(r, lines, issue);
      }
    }
  }
  return Verdict::kDeliver;
}

void CompactRecordExpander::NoteCollective(const Record& r) {
  Collective d;
  d.op = r.Str(CK::op).value_or("");
  d.dtype = r.Str(CK::dtype).value_or("");
  d.count = r.Int(CK::count).value_or(0);
  d.bytes = r.Int(CK::bytes).value_or(0);
  d.tag = r.Str(CK::tag).value_or("");
  d.site = records::CollView(r).site();
  template_.Add(static_cast<int>(r.Int(CK::pg).value_or(0)), r.step(), std::move(d));
}

CompactRecordExpander::Verdict CompactRecordExpander::ExpandCollectives(
    const Record& r, std::vector<std::string>* lines, std::string* issue) {
  const records::CollsView colls(r);
  const auto pg = colls.pg(), seq = colls.seq();
  std::vector<int64_t>& at = colls_at_;  // reused: no allocation per record
  std::vector<int64_t>& dur = colls_dur_;
  if (!pg || !seq || !colls.times_us(&at, &dur)) {
    *issue =
        "a colls record with integers \"pg\", \"seq\", an array \"dur_us\" of one integer "
        "per op and \"at_us\" of as many (v2) or \"gap_us\" of one fewer (v3)";
    return Verdict::kReplace;
  }
  const auto* previous = template_.PreviousStep(static_cast<int>(*pg), r.step(), at.size());
  if (previous == nullptr) {
    *issue = "a colls record repeating an earlier step of " + std::to_string(at.size()) +
             " collectives on group " + std::to_string(*pg) + " (there is none before it)";
    return Verdict::kReplace;
  }
  if (totals_.step != r.step()) totals_ = StepTotals{r.step()};
  for (size_t i = 0; i < at.size(); ++i) {
    const Collective& d = (*previous)[i];
    totals_.n += 1;
    totals_.bytes += d.bytes;
    totals_.dur += dur[i] * 1000;
    records::CollRecord coll;
    coll.pg = *pg;
    coll.seq = *seq + static_cast<int64_t>(i);
    coll.op = d.op;
    coll.dtype = d.dtype;
    coll.count = d.count;
    coll.bytes = d.bytes;
    coll.dur = dur[i] * 1000;
    coll.tag = d.tag;
    coll.site = d.site;
    std::string line;
    records::AppendRecordLine(coll, records::At{r.ts() + at[i] * 1000, r.step(), r.tid()}, &line);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    lines->push_back(std::move(line));
  }
  template_.Repeat(static_cast<int>(*pg), r.step(), at.size());
  return Verdict::kReplace;
}

bool CompactRecordExpander::AppendRepeated(std::string_view what, std::string* line) const {
  const auto it = latest_fp_.find(what);
  if (it == latest_fp_.end()) return false;
  if (it->second.empty()) return false;
  line->append(it->second);
  return true;
}

CompactRecordExpander::Verdict CompactRecordExpander::ExpandPreStep(const Record& r,
                                                                    std::vector<std::string>* lines,
                                                                    std::string* issue) {
  const std::string_view raw = r.raw_line();
  const auto what = r.Str(FK::what), same = r.Str(FK::same);
  std::string line;
  if (!what || !same || !CutStringMember(raw, FK::same.name(), *same, &line) || line.empty() ||
      line.back() != '}') {
    *issue = "a pre-step fp record with \"what\" and a \"same\" string";
    return Verdict::kReplace;
  }
  line.pop_back();  // '}'
  if (!AppendRepeated(*what, &line)) {
    *issue = "a pre-step fp record repeating an earlier " + std::string(*what) + " " +
             std::string(*same) + " fp record (there is none before it)";
    return Verdict::kReplace;
  }
  line.push_back('}');
  lines->push_back(std::move(line));
  return Verdict::kReplace;
}

CompactRecordExpander::Verdict CompactRecordExpander::ExpandStep(const Record& r,
                                                                 std::vector<std::string>* lines,
                                                                 std::string* issue) {
  const StepTotals totals = totals_;
  totals_ = StepTotals();
  const bool flagged = r.Has(SK::pre_step_fp);
  // "coll" with "wait" alone: the rest sums from the step's colls records.
  const bool summed = r.NumberMembers(SK::coll, &coll_members_) && coll_members_.size() == 1 &&
                      coll_members_[0].name == records::StepCollKeys::wait.name();
  // v3 and v4: the per-phase times as arrays in phase::kStepOrder.
  bool arrays = false;
  for (const PhaseArray& a : kPhaseArrays) arrays = arrays || r.IntArray(*a.array, &phase_ns_);
  if (!flagged && !summed && !arrays && !repeats_) return Verdict::kDeliver;
  std::string step_line(r.raw_line());
  if (arrays) ExpandPhaseArrays(r, &step_line, issue);
  if (repeats_) PutBackRepeats(&step_line);
  if (flagged) ExpandPreStepFlag(r, lines, &step_line, issue);
  if (summed) {
    if (totals.step != r.step() || !InsertStepTotals(totals, &step_line)) {
      *issue = "a step record with the full \"coll\" totals (no colls record in step " +
               std::to_string(r.step()) + " to sum)";
    }
  }
  lines->push_back(std::move(step_line));
  return Verdict::kReplace;
}

void CompactRecordExpander::PutBackRepeats(std::string* line) {
  static_assert(std::size(kRepeated) == kRepeatedCount);
  for (size_t i = 0; i < kRepeatedCount; ++i) {
    std::string needle = ",\"";
    needle.append(kRepeated[i]->name()).append("\":");
    const size_t at = line->find(needle);
    if (at == std::string::npos) {
      const size_t close = line->rfind('}');
      if (repeated_[i].empty() || close == std::string::npos) continue;
      line->insert(close, needle + repeated_[i]);
      continue;
    }
    // A number or null: it ends where the next member or the object does.
    const size_t value = at + needle.size(), end = line->find_first_of(",}", value);
    if (end == std::string::npos) continue;
    if (line->compare(value, end - value, "null") == 0) {
      repeated_[i].clear();
      line->erase(at, end - at);
    } else {
      repeated_[i].assign(*line, value, end - value);
    }
  }
}

void CompactRecordExpander::ExpandPhaseArrays(const Record& r, std::string* step_line,
                                              std::string* issue) {
  for (const PhaseArray& a : kPhaseArrays) {
    if (!r.IntArray(*a.array, &phase_ns_)) continue;
    if (phase_ns_.size() > phase::kStepOrderCount ||
        !ObjectFromArray(*a.array, *a.object, a.ns_per_unit, phase_ns_, step_line))
      *issue = "a step record whose \"" + std::string(a.array->name()) + "\" is an " +
               (a.ns_per_unit == 1 ? "object or an " : "") + "array of at most " +
               std::to_string(phase::kStepOrderCount) + " integers (" +
               (a.ns_per_unit == 1 ? "ns" : "µs") + " per phase, in the order data, " +
               "forward, backward, sync, optimizer, checkpoint)";
  }
}

bool CompactRecordExpander::ObjectFromArray(const FieldKey& array, const FieldKey& object,
                                            int64_t ns_per_unit, const std::vector<int64_t>& times,
                                            std::string* line) {
  // "array":[a,b,...] -> "object":{"data":a,"forward":b,...} in ns, zeros left out (as v2
  // wrote them)
  std::string needle = "\"";
  needle.append(array.name()).append("\":[");
  const size_t at = line->find(needle);
  if (at == std::string::npos) return false;
  const size_t close = line->find(']', at + needle.size());
  if (close == std::string::npos) return false;
  std::string value;
  JsonLine members(&value);  // "{" and the members; closed below
  for (size_t i = 0; i < times.size(); ++i)
    if (times[i] != 0) members.Field(phase::kStepOrder[i], times[i] * ns_per_unit);
  value.push_back('}');
  std::string member = "\"";
  member.append(object.name()).append("\":").append(value);
  line->replace(at, close + 1 - at, member);
  return true;
}

bool CompactRecordExpander::InsertStepTotals(const StepTotals& totals, std::string* line) {
  // "coll":{"wait":W} -> "coll":{"n":N,"bytes":B,"dur":D,"wait":W}
  constexpr std::string_view kWaitAlone = "\"coll\":{\"wait\":";
  const size_t at = line->find(kWaitAlone);
  if (at == std::string::npos) return false;
  std::string sums;
  JsonLine l(&sums);  // "{" and the members; the object goes on with "wait"
  using C = records::StepCollKeys;
  l.Field(C::n.name(), totals.n)
      .Field(C::bytes.name(), totals.bytes)
      .Field(C::dur.name(), totals.dur);
  sums.push_back(',');
  line->replace(at + kWaitAlone.size() - std::string_view("\"wait\":").size() - 1, 1, sums);
  return true;
}

void CompactRecordExpander::ExpandPreStepFlag(const Record& r, std::vector<std::string>* lines,
                                              std::string* step_line, std::string* issue) {
  const std::string raw = *step_line;
  const auto kinds = r.Str(SK::pre_step_fp);
  if (!kinds || !CutStringMember(raw, SK::pre_step_fp.name(), *kinds, step_line)) {
    *issue = "a step record whose \"pre_step_fp\" is a string (fp kinds, comma-separated)";
    return;
  }
  // The pre-step records the writer left out, as it would have written them, at the step's
  // end (near when the optimizer ran).
  const int64_t at = r.ts() + std::max<int64_t>(0, r.Int(SK::dur).value_or(0));
  for (std::string_view rest = *kinds; !rest.empty();) {
    const size_t comma = rest.find(',');
    const std::string_view what = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    std::string line;
    JsonLine l(&line);  // not finished: AppendRepeated adds the last members
    l.Field(kFieldType, rec::kFingerprint).Field(kFieldTs, at).Field(kFieldStep, r.step());
    if (r.tid() != 0) l.Field(kFieldTid, r.tid());
    l.Field(FK::what.name(), what).Field(FK::why.name(), records::fp_why::kPreStep);
    if (!AppendRepeated(what, &line)) {
      *issue = "a step record whose \"pre_step_fp\" names kinds with an earlier fp record (no " +
               std::string(what) + " one)";
      continue;
    }
    line.push_back('}');
    lines->push_back(std::move(line));
  }
}

}  // namespace dsdiag::trace
