#include "report/loader_sweep.h"

#include <simdjson.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "trace/json_syntax.h"
#include "trace/json_value.h"
#include "trace/trace_reader.h"

namespace dsdiag::report {
namespace {

using trace::JsonValue;

// A field that is not what the format says: names the file and the field's path.
class FieldError {
 public:
  explicit FieldError(std::string path) : path_(std::move(path)) {}
  std::string Message(const std::string& field, const std::string& expected) const {
    return path_ + ": field " + field + ": expected " + expected;
  }

 private:
  std::string path_;
};

bool IsNumber(const JsonValue* v) {
  return v && (v->kind() == JsonValue::Kind::kInt || v->kind() == JsonValue::Kind::kDouble) &&
         std::isfinite(v->as_double());
}

std::optional<double> OptNumber(const JsonValue& o, const char* key) {
  const JsonValue* v = o.Find(key);
  return IsNumber(v) ? std::optional<double>(v->as_double()) : std::nullopt;
}

bool GetInt(const JsonValue& o, const char* key, int64_t min, int64_t* out) {
  const JsonValue* v = o.Find(key);
  if (!v || v->kind() != JsonValue::Kind::kInt || v->as_int() < min) return false;
  *out = v->as_int();
  return true;
}

// "1:17" for a byte offset into `text`.
std::string LineColumn(const std::string& text, size_t offset) {
  int64_t line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  return std::to_string(line) + ":" + std::to_string(offset - line_start + 1);
}

// Fills *point from points[i]; returns an error message or "".
std::string ParsePoint(const JsonValue& p, size_t i, const FieldError& err, SweepPoint* point) {
  const std::string at = "points[" + std::to_string(i) + "]";
  if (!p.is_object()) return err.Message(at, "an object");
  if (!GetInt(p, "workers", 0, &point->workers))
    return err.Message(at + ".workers", "an integer >= 0");
  if (!GetInt(p, "batch_size", 1, &point->batch_size))
    return err.Message(at + ".batch_size", "an integer >= 1");
  const auto median = OptNumber(p, "samples_per_s_median");
  if (!median || *median < 0) return err.Message(at + ".samples_per_s_median", "a number >= 0");
  point->samples_per_s_median = *median;
  point->samples_per_s_min = OptNumber(p, "samples_per_s_min");
  point->samples_per_s_max = OptNumber(p, "samples_per_s_max");
  point->first_batch_ms = OptNumber(p, "first_batch_ms");
  point->peak_rss_mb = OptNumber(p, "peak_rss_mb");
  return "";
}

std::string ParseRecommendation(const JsonValue& r, const FieldError& err,
                                SweepRecommendation* out) {
  if (!r.is_object()) return err.Message("recommendation", "an object");
  if (!GetInt(r, "workers", 0, &out->workers))
    return err.Message("recommendation.workers", "an integer >= 0");
  int64_t batch = 0;
  if (GetInt(r, "batch_size", 1, &batch)) out->batch_size = batch;
  const JsonValue* reason = r.Find("reason");
  if (reason && reason->kind() == JsonValue::Kind::kString) out->reason = reason->as_string();
  return "";
}

}  // namespace

LoaderSweepResult ParseLoaderSweep(const std::string& text, const std::string& path) {
  LoaderSweepResult result;
  result.present = true;
  if (auto syntax = trace::CheckJsonObjectLine(text)) {
    result.error = path + ":" + LineColumn(text, syntax->offset) + ": expected " +
                   syntax->expected + ", found " + trace::DescribeBytesAt(text, syntax->offset);
    return result;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(simdjson::padded_string(text)).get(doc)) {
    result.error = path + ":1:1: expected a JSON object";
    return result;
  }
  const JsonValue root = trace::ToJsonValue(doc);
  const FieldError err(path);
  const JsonValue* schema = root.Find("schema");
  if (!schema || schema->kind() != JsonValue::Kind::kString ||
      schema->as_string() != kLoaderSweepSchema) {
    result.error = err.Message("schema", std::string("\"") + kLoaderSweepSchema + "\"");
    return result;
  }
  LoaderSweep sweep;
  sweep.path = path;
  const JsonValue* points = root.Find("points");
  if (!points || !points->is_array()) {
    result.error = err.Message("points", "an array");
    return result;
  }
  for (size_t i = 0; i < points->elements().size(); ++i) {
    SweepPoint point;
    result.error = ParsePoint(points->elements()[i], i, err, &point);
    if (!result.error.empty()) return result;
    sweep.points.push_back(point);
  }
  const JsonValue* recommendation = root.Find("recommendation");
  if (recommendation && !recommendation->is_null()) {
    SweepRecommendation r;
    result.error = ParseRecommendation(*recommendation, err, &r);
    if (!result.error.empty()) return result;
    sweep.recommendation = r;
  }
  result.sweep = std::move(sweep);
  return result;
}

LoaderSweepResult ReadLoaderSweep(const std::string& run_dir) {
  const std::string path = (std::filesystem::path(run_dir) / kLoaderSweepFileName).string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {};
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LoaderSweepResult result;
    result.present = true;
    result.error = path + ": cannot be read";
    return result;
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseLoaderSweep(text.str(), path);
}

}  // namespace dsdiag::report
