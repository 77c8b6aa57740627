#include "trace/trace_header.h"

#include <array>
#include <charconv>
#include <string_view>

#include "trace/json_line.h"
#include "trace/record_types.h"

extern char** environ;

namespace dsdiag::trace {
namespace {

// Families of variables that change how collectives, threads and devices behave.
constexpr std::array<std::string_view, 6> kEnvPrefixes = {"NCCL_", "GLOO_",  "OMP_",
                                                          "MKL_",  "TORCH_", "CUDA_"};

// Single variables: the rendezvous and the launcher's idea of the job.
constexpr std::array<std::string_view, 14> kEnvNames = {"MASTER_ADDR",
                                                        "MASTER_PORT",
                                                        "WORLD_SIZE",
                                                        "LOCAL_WORLD_SIZE",
                                                        "SLURM_JOB_ID",
                                                        "SLURM_STEP_ID",
                                                        "SLURM_PROCID",
                                                        "SLURM_LOCALID",
                                                        "SLURM_NODEID",
                                                        "SLURM_NTASKS",
                                                        "OMPI_COMM_WORLD_RANK",
                                                        "OMPI_COMM_WORLD_SIZE",
                                                        "OMPI_COMM_WORLD_LOCAL_RANK",
                                                        "OMPI_COMM_WORLD_LOCAL_SIZE"};

bool IsRelevant(std::string_view name) {
  for (std::string_view p : kEnvPrefixes) {
    if (name.substr(0, p.size()) == p) return true;
  }
  for (std::string_view n : kEnvNames) {
    if (name == n) return true;
  }
  return false;
}

// JsonLine writes keys verbatim; environment names come from outside dsdiag, so both
// sides are quoted here.
void AppendStringMap(JsonLine& line, std::string_view key,
                     const std::map<std::string, std::string>& map) {
  std::string json = "{";
  for (const auto& [k, v] : map) {
    if (json.size() > 1) json.push_back(',');
    JsonLine::AppendQuoted(&json, k);
    json.push_back(':');
    JsonLine::AppendQuoted(&json, v);
  }
  json.push_back('}');
  line.Raw(key, json);
}

}  // namespace

bool IsHeaderField(std::string_view key) {
  static constexpr std::array<std::string_view, 15> kFields = {
      "type",       "ts",   "step", "tid",      "schema", "run_id", "rank", "world_size",
      "local_rank", "host", "pid",  "versions", "env",    "config", "clock"};
  for (std::string_view f : kFields) {
    if (key == f) return true;
  }
  return false;
}

std::map<std::string, std::string> CollectRelevantEnv() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view entry(*e);
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view name = entry.substr(0, eq);
    if (IsRelevant(name)) env.emplace(std::string(name), std::string(entry.substr(eq + 1)));
  }
  return env;
}

void AppendHeaderRecord(const TraceHeader& header, int64_t ts_ns, std::string* out) {
  JsonLine line(out);
  line.Field(kFieldType, rec::kHeader).Field(kFieldTs, ts_ns).Field(kFieldStep, int64_t{0});
  line.Field("schema", std::string_view(header.schema))
      .Field("run_id", std::string_view(header.run_id))
      .Field("rank", header.rank)
      .Field("world_size", header.world_size)
      .Field("local_rank", header.local_rank)
      .Field("host", std::string_view(header.host))
      .Field("pid", header.pid);
  AppendStringMap(line, "versions", header.versions);
  AppendStringMap(line, "env", header.env);
  // The format promises an object here; a caller that left it null gets an empty one.
  if (header.config.is_object()) {
    line.Raw("config", header.config.ToJson());
  } else {
    line.Raw("config", "{}");
  }
  AppendClockObject(&line, "clock", header.clock);
  for (const JsonValue::Member& m : header.sections.members()) {
    // A section named like a header field would make a duplicate key, which readers
    // resolve differently: it is not written.
    if (IsHeaderField(m.first)) continue;
    // Escaped: a name with a quote, backslash or newline broke the line (found by
    // fuzz/trace_reader_fuzzer, which writes back the headers it reads).
    line.RawEscapedKey(m.first, m.second.ToJson());
  }
  line.Finish();
}

// "dsdiag.trace/<major>[.<minor>]" → major, or -1.
int TraceSchemaMajor(std::string_view schema) {
  // kSchema is "dsdiag.trace/<major>": its prefix up to the slash is every version's.
  const std::string_view kPrefix = kSchema.substr(0, kSchema.rfind('/') + 1);
  if (schema.substr(0, kPrefix.size()) != kPrefix) return -1;
  std::string_view rest = schema.substr(kPrefix.size());
  int major = -1;
  auto r = std::from_chars(rest.data(), rest.data() + rest.size(), major);
  if (r.ec != std::errc() || (r.ptr != rest.data() + rest.size() && *r.ptr != '.')) return -1;
  return major;
}

bool IsReadableSchema(std::string_view schema) {
  const int major = TraceSchemaMajor(schema);
  return major >= kOldestSchemaMajor && major <= kSchemaMajor;
}

}  // namespace dsdiag::trace
