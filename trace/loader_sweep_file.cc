#include "trace/loader_sweep_file.h"

#include <simdjson.h>

#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "trace/json_from_dom.h"
#include "trace/json_syntax.h"
#include "trace/json_value.h"

namespace dsdiag::trace {
namespace {

// Turns "field `path` is not `expected`" into a LocatedIssue at that field's value (or at
// the object that lacks it).
class FieldChecker {
 public:
  FieldChecker(const std::string& text, const std::string& path) : text_(text), path_(path) {}

  LocatedIssue Fail(const std::string& field, const std::string& parent,
                    const std::string& expected) const {
    std::string found;
    size_t offset = 0;
    if (const auto span = FindValueAt(text_, field)) {
      offset = span->offset;
      found = DescribeValue(text_, *span);
    } else {
      const auto container = parent.empty() ? std::nullopt : FindValueAt(text_, parent);
      offset = container ? container->offset : text_.find('{');
      if (offset == std::string::npos) offset = 0;
      const size_t dot = field.rfind('.');
      found = "no \"" + field.substr(dot == std::string::npos ? 0 : dot + 1) + "\"";
    }
    return IssueAt(path_, text_, offset, "field " + field + ": " + expected, found);
  }

 private:
  const std::string& text_;
  const std::string& path_;
};

bool IsNumber(const JsonValue* v) {
  return v && (v->kind() == JsonValue::Kind::kInt || v->kind() == JsonValue::Kind::kDouble) &&
         std::isfinite(v->as_double());
}

std::optional<double> OptNumber(const JsonValue& o, const char* key) {
  const JsonValue* v = o.Find(key);
  return IsNumber(v) ? std::optional<double>(v->as_double()) : std::nullopt;
}

bool GetInt(const JsonValue& o, const char* key, int64_t min, int* out) {
  const JsonValue* v = o.Find(key);
  if (!v || v->kind() != JsonValue::Kind::kInt || v->as_int() < min || v->as_int() > INT_MAX)
    return false;
  *out = static_cast<int>(v->as_int());
  return true;
}

std::optional<LocatedIssue> ParsePoint(const JsonValue& p, size_t i, const FieldChecker& check,
                                       LoaderSweepPoint* point) {
  const std::string at = "points[" + std::to_string(i) + "]";
  if (!p.is_object()) return check.Fail(at, "points", "an object");
  if (!GetInt(p, "workers", 0, &point->workers))
    return check.Fail(at + ".workers", at, "an integer >= 0");
  if (!GetInt(p, "batch_size", 1, &point->batch_size))
    return check.Fail(at + ".batch_size", at, "an integer >= 1");
  const auto median = OptNumber(p, "samples_per_s_median");
  if (!median || *median < 0) return check.Fail(at + ".samples_per_s_median", at, "a number >= 0");
  point->samples_per_s_median = *median;
  point->samples_per_s_min = OptNumber(p, "samples_per_s_min");
  point->samples_per_s_max = OptNumber(p, "samples_per_s_max");
  point->first_batch_ms = OptNumber(p, "first_batch_ms");
  point->peak_rss_mb = OptNumber(p, "peak_rss_mb");
  for (const auto& [key, field] : {std::pair{"pin_memory", &point->pin_memory},
                                   std::pair{"persistent_workers", &point->persistent_workers}}) {
    const JsonValue* v = p.Find(key);
    if (!v || v->is_null()) continue;
    if (v->kind() != JsonValue::Kind::kBool) return check.Fail(at + "." + key, at, "true or false");
    *field = v->as_bool();
  }
  return std::nullopt;
}

std::optional<bool> OptBool(const JsonValue& o, const char* key) {
  const JsonValue* v = o.Find(key);
  return v && v->kind() == JsonValue::Kind::kBool ? std::optional<bool>(v->as_bool())
                                                  : std::nullopt;
}

void SetIfPresent(JsonValue* o, const char* key, const std::optional<bool>& v) {
  if (v) o->Set(key, *v);
}

std::optional<LocatedIssue> ParseRecommendation(const JsonValue& r, const FieldChecker& check,
                                                LoaderSweepRecommendation* out) {
  if (!r.is_object()) return check.Fail("recommendation", "", "an object");
  if (!GetInt(r, "workers", 0, &out->workers))
    return check.Fail("recommendation.workers", "recommendation", "an integer >= 0");
  int batch = 0;
  if (GetInt(r, "batch_size", 1, &batch)) out->batch_size = batch;
  out->pin_memory = OptBool(r, "pin_memory");
  out->persistent_workers = OptBool(r, "persistent_workers");
  const JsonValue* reason = r.Find("reason");
  if (reason && reason->kind() == JsonValue::Kind::kString) out->reason = reason->as_string();
  return std::nullopt;
}

JsonValue Optional(const std::optional<double>& v) { return v ? JsonValue(*v) : JsonValue(); }

}  // namespace

std::string LoaderSwitchesText(const std::optional<bool>& pin_memory,
                               const std::optional<bool>& persistent_workers) {
  std::string text;
  if (pin_memory.value_or(false)) text += ", pin_memory";
  if (persistent_workers.value_or(false)) text += ", persistent_workers";
  return text;
}

std::string LoaderSweepJson(const LoaderSweep& sweep) {
  JsonValue root = JsonValue::Object();
  root.Set("schema", std::string(kLoaderSweepSchema));
  JsonValue points = JsonValue::Array();
  for (const LoaderSweepPoint& p : sweep.points) {
    JsonValue o = JsonValue::Object();
    o.Set("workers", p.workers);
    o.Set("batch_size", p.batch_size);
    o.Set("samples_per_s_median", p.samples_per_s_median);
    o.Set("samples_per_s_min", Optional(p.samples_per_s_min));
    o.Set("samples_per_s_max", Optional(p.samples_per_s_max));
    o.Set("first_batch_ms", Optional(p.first_batch_ms));
    o.Set("peak_rss_mb", Optional(p.peak_rss_mb));
    SetIfPresent(&o, "pin_memory", p.pin_memory);
    SetIfPresent(&o, "persistent_workers", p.persistent_workers);
    points.Push(std::move(o));
  }
  root.Set("points", std::move(points));
  if (sweep.recommendation) {
    JsonValue rec = JsonValue::Object();
    rec.Set("workers", sweep.recommendation->workers);
    if (sweep.recommendation->batch_size) rec.Set("batch_size", *sweep.recommendation->batch_size);
    SetIfPresent(&rec, "pin_memory", sweep.recommendation->pin_memory);
    SetIfPresent(&rec, "persistent_workers", sweep.recommendation->persistent_workers);
    rec.Set("reason", sweep.recommendation->reason);
    root.Set("recommendation", std::move(rec));
  }
  return root.ToJson() + "\n";
}

LoaderSweepFile ParseLoaderSweep(const std::string& text, const std::string& path) {
  LoaderSweepFile file;
  file.present = true;
  file.path = path;
  if (auto syntax = CheckJsonObjectLine(text)) {
    file.issue = IssueAt(path, text, syntax->offset, syntax->expected,
                         DescribeBytesAt(text, syntax->offset));
    return file;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(simdjson::padded_string(text)).get(doc)) {
    file.issue = IssueAt(path, text, 0, "a JSON object", DescribeBytesAt(text, 0));
    return file;
  }
  const JsonValue root = ToJsonValue(doc);
  const FieldChecker check(text, path);
  const JsonValue* schema = root.Find("schema");
  if (!schema || schema->kind() != JsonValue::Kind::kString ||
      schema->as_string() != kLoaderSweepSchema) {
    file.issue = check.Fail("schema", "", "\"" + std::string(kLoaderSweepSchema) + "\"");
    return file;
  }
  LoaderSweep sweep;
  const JsonValue* points = root.Find("points");
  if (!points || !points->is_array()) {
    file.issue = check.Fail("points", "", "an array");
    return file;
  }
  for (size_t i = 0; i < points->elements().size(); ++i) {
    LoaderSweepPoint point;
    file.issue = ParsePoint(points->elements()[i], i, check, &point);
    if (file.issue) return file;
    sweep.points.push_back(point);
  }
  const JsonValue* recommendation = root.Find("recommendation");
  if (recommendation && !recommendation->is_null()) {
    LoaderSweepRecommendation r;
    file.issue = ParseRecommendation(*recommendation, check, &r);
    if (file.issue) return file;
    sweep.recommendation = r;
  }
  file.sweep = std::move(sweep);
  return file;
}

LoaderSweepFile ReadLoaderSweepFile(const std::string& run_dir) {
  const std::string path = (std::filesystem::path(run_dir) / kLoaderSweepFileName).string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoaderSweepFile file;
    file.present = true;
    file.path = path;
    file.issue = LocatedIssue{path, 0, 0, "a readable file", "one that cannot be read", false};
    return file;
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseLoaderSweep(text.str(), path);
}

}  // namespace dsdiag::trace
