// Helpers of the trainer's end-to-end tests: run the real `dsdiag train` binary
// (DSDIAG_BINARY) over Gloo on loopback, then read its traces back as JSON trees.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "trace/json_value.h"

namespace dsdiag::trainer_test {

// A fresh, empty directory for one test's runs (removed when the test passes).
class TempDir {
 public:
  explicit TempDir(const std::string& name);
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& child) const { return path_ + "/" + child; }

 private:
  std::string path_;
};

// `dsdiag <args...>` with stdout and stderr in `log`. Returns the exit status (128 + signo
// when killed); after `timeout_s` the process group is killed and -1 is returned.
int RunDsdiag(const std::vector<std::string>& args, const std::string& log, int timeout_s = 120);

// Starts `dsdiag <args...>` in the background (its own process group).
pid_t StartDsdiag(const std::vector<std::string>& args, const std::string& log);
// Waits for `pid`: exit status as above, -1 after `timeout_s` (then the group is killed).
int WaitDsdiag(pid_t pid, int timeout_s);

std::string ReadFile(const std::string& path);

// One rank's trace: every complete line parsed (a cut-short last line is dropped).
struct Trace {
  std::vector<trace::JsonValue> records;
  const trace::JsonValue& header() const { return records.front(); }
  // Records of `type`, in file order.
  std::vector<const trace::JsonValue*> Of(const std::string& type) const;
  const trace::JsonValue* Last(const std::string& type) const;
  // The parameter index of `name` in the `params` record, -1 when absent.
  int ParamIndex(const std::string& name) const;
  std::string ParamName(int index) const;
};

Trace ReadTrace(const std::string& path);
// rank-00000.jsonl, rank-00001.jsonl, ... of `run_dir`, in rank order.
std::vector<Trace> ReadRun(const std::string& run_dir, int world_size);

// Field helpers (a missing field fails the current test and returns a neutral value).
int64_t Int(const trace::JsonValue& record, const std::string& key);
double Real(const trace::JsonValue& record, const std::string& key);
std::string Str(const trace::JsonValue& record, const std::string& key);
bool Bool(const trace::JsonValue& record, const std::string& key);
const trace::JsonValue& Field(const trace::JsonValue& record, const std::string& key);

// The record of `type` whose "step" is `step` (first one), or null.
const trace::JsonValue* AtStep(const Trace& trace, const std::string& type, int64_t step);
// The `fp` records matching what/why, in order, as their hash lists.
std::vector<std::string> Fingerprints(const Trace& trace, const std::string& what,
                                      const std::string& why);

}  // namespace dsdiag::trainer_test
