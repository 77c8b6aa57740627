#include "tests/trainer/trainer_test_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "trace/run_files.h"
#include "trace/trace_reader.h"

namespace dsdiag::trainer_test {
namespace {

namespace fs = std::filesystem;

const trace::JsonValue& NullValue() {
  static const trace::JsonValue null;
  return null;
}

}  // namespace

TempDir::TempDir(const std::string& name) {
  path_ = (fs::temp_directory_path() / ("dsdiag-trainer-" + name + "-" + std::to_string(getpid())))
              .string();
  fs::remove_all(path_);
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  // Keep the evidence of a failure.
  if (!::testing::Test::HasFailure()) {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
}

pid_t StartDsdiag(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> argv_storage = {DSDIAG_BINARY};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    std::vector<char*> argv;
    for (std::string& a : argv_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

int WaitDsdiag(pid_t pid, int timeout_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (true) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      ADD_FAILURE() << "dsdiag did not finish within " << timeout_s << " s";
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

int RunDsdiag(const std::vector<std::string>& args, const std::string& log, int timeout_s) {
  return WaitDsdiag(StartDsdiag(args, log), timeout_s);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<const trace::JsonValue*> Trace::Of(const std::string& type) const {
  std::vector<const trace::JsonValue*> out;
  for (const trace::JsonValue& r : records) {
    const trace::JsonValue* t = r.Find("type");
    if (t && t->as_string() == type) out.push_back(&r);
  }
  return out;
}

const trace::JsonValue* Trace::Last(const std::string& type) const {
  std::vector<const trace::JsonValue*> all = Of(type);
  return all.empty() ? nullptr : all.back();
}

int Trace::ParamIndex(const std::string& name) const {
  const trace::JsonValue* params = Last("params");
  if (!params) return -1;
  const auto& names = Field(*params, "names").elements();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i].as_string() == name) return static_cast<int>(i);
  }
  return -1;
}

std::string Trace::ParamName(int index) const {
  const trace::JsonValue* params = Last("params");
  if (!params) return "";
  const auto& names = Field(*params, "names").elements();
  return index >= 0 && index < static_cast<int>(names.size()) ? names[index].as_string() : "";
}

Trace ReadTrace(const std::string& path) {
  Trace trace;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  simdjson::dom::parser parser;
  simdjson::dom::element element;
  std::string header;
  if (std::getline(in, header) && parser.parse(header).get(element) == simdjson::SUCCESS)
    trace.records.push_back(trace::ToJsonValue(element));
  // The events through the reader, as the analyzers see them: trace v2's compact records
  // come back as the v1 records they stand for (trace/compact_records.h).
  std::string error;
  auto reader = trace::TraceReader::Open(path, &error);
  EXPECT_TRUE(reader) << error;
  trace::Record r;
  while (reader && reader->Next(&r)) {
    const std::string line(r.raw_line());
    if (parser.parse(line).get(element) == simdjson::SUCCESS)
      trace.records.push_back(trace::ToJsonValue(element));
  }
  // Only the last line of a killed rank may be cut short.
  for (const trace::LocatedIssue& i :
       reader ? reader->issues() : std::vector<trace::LocatedIssue>{})
    EXPECT_TRUE(i.truncated_tail) << i.ToString();
  EXPECT_FALSE(trace.records.empty()) << path << " is empty";
  if (trace.records.empty()) trace.records.push_back(trace::JsonValue::Object());
  return trace;
}

std::vector<Trace> ReadRun(const std::string& run_dir, int world_size) {
  std::vector<Trace> traces;
  for (int r = 0; r < world_size; ++r) {
    traces.push_back(ReadTrace(run_dir + "/" + trace::RankTraceFileName(r)));
  }
  return traces;
}

const trace::JsonValue& Field(const trace::JsonValue& record, const std::string& key) {
  const trace::JsonValue* v = record.Find(key);
  if (v == nullptr) {
    ADD_FAILURE() << "record lacks \"" << key << "\": " << record.ToJson();
    return NullValue();
  }
  return *v;
}

int64_t Int(const trace::JsonValue& record, const std::string& key) {
  return Field(record, key).as_int();
}
double Real(const trace::JsonValue& record, const std::string& key) {
  return Field(record, key).as_double();
}
std::string Str(const trace::JsonValue& record, const std::string& key) {
  return Field(record, key).as_string();
}
bool Bool(const trace::JsonValue& record, const std::string& key) {
  return Field(record, key).as_bool();
}

const trace::JsonValue* AtStep(const Trace& trace, const std::string& type, int64_t step) {
  for (const trace::JsonValue* r : trace.Of(type)) {
    if (Int(*r, "step") == step) return r;
  }
  return nullptr;
}

std::vector<std::string> Fingerprints(const Trace& trace, const std::string& what,
                                      const std::string& why) {
  std::vector<std::string> out;
  for (const trace::JsonValue* r : trace.Of("fp")) {
    if (Str(*r, "what") != what || Str(*r, "why") != why) continue;
    out.push_back("step " + std::to_string(Int(*r, "step")) + ": " + Field(*r, "h").ToJson());
  }
  return out;
}

}  // namespace dsdiag::trainer_test
