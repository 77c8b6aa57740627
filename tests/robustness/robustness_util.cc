#include "tests/robustness/robustness_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>

#include "tests/trainer/trainer_test_util.h"
#include "trace/record_types.h"
#include "trace/trace_reader.h"

namespace dsdiag::robustness_test {
namespace {

namespace fs = std::filesystem;

constexpr auto kPollInterval = std::chrono::milliseconds(50);

// In the child, before exec: stdout and stderr to `log`, stdin from /dev/null.
void RedirectOutput(const std::string& log) {
  const int in = open("/dev/null", O_RDONLY);
  if (in >= 0) dup2(in, STDIN_FILENO);
  const int out = log.empty() ? open("/dev/null", O_WRONLY)
                              : open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (out >= 0) {
    dup2(out, STDOUT_FILENO);
    dup2(out, STDERR_FILENO);
  }
}

[[noreturn]] void Exec(const std::vector<std::string>& argv) {
  std::vector<std::string> storage = argv;
  std::vector<char*> args;
  for (std::string& a : storage) args.push_back(a.data());
  args.push_back(nullptr);
  execvp(args[0], args.data());
  _exit(127);
}

}  // namespace

bool IsRoot() { return geteuid() == 0; }

pid_t StartCommand(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    RedirectOutput(log);
    Exec(argv);
  }
  if (pid > 0) setpgid(pid, pid);
  return pid;
}

int RunCommand(const std::vector<std::string>& argv, std::string* output) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    close(pipe_fds[0]);
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    Exec(argv);
  }
  close(pipe_fds[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0 && output) output->append(buf, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool ChildRunning(pid_t pid) {
  siginfo_t info{};
  // WNOWAIT: look without reaping, so that WaitDsdiag still gets the status.
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0) return false;
  return info.si_pid == 0;
}

Progress ReadProgress(const std::string& path) {
  Progress p;
  std::string error;
  auto reader = trace::TraceReader::Open(path, &error);
  if (!reader) return p;
  if (const auto& header = reader->ReadHeader()) p.pid = header->pid;
  trace::Record r;
  while (reader->Next(&r)) {
    if (r.type() == trace::rec::kStep) p.last_step_done = std::max(p.last_step_done, r.step());
  }
  return p;
}

bool WaitForStep(const std::string& path, int64_t step, pid_t runner, int limit_s) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limit_s);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ReadProgress(path).last_step_done >= step) return true;
    if (!ChildRunning(runner)) return false;
    std::this_thread::sleep_for(kPollInterval);
  }
  return false;
}

TraceSummary ReadSummary(const std::string& path) {
  TraceSummary s;
  std::string error;
  auto reader = trace::TraceReader::Open(path, &error);
  if (!reader) {
    s.issues.push_back(error);
    return s;
  }
  s.opened = true;
  trace::Record r;
  while (reader->Next(&r)) {
    ++s.records;
    s.last_type = std::string(r.type());
    if (r.type() == trace::rec::kStepBegin) s.last_step_begun = r.step();
    if (r.type() == trace::rec::kStep) {
      s.last_step_done = r.step();
      s.steps_done.insert(r.step());
    }
    if (r.type() == trace::rec::kEnd) s.end_reason = std::string(r.Str("reason").value_or("?"));
  }
  s.issue_count = reader->issue_count();
  s.truncated_tail = reader->saw_truncated_tail();
  for (const trace::LocatedIssue& i : reader->issues()) s.issues.push_back(i.ToString());
  return s;
}

std::vector<trace::JsonValue> Compare(const std::string& run_dir, const std::string& log,
                                      int* status) {
  *status = trainer_test::RunDsdiag({"compare", run_dir, "--format", "json"}, log, 60);
  const std::string text = trainer_test::ReadFile(log);
  const size_t start = text.find("{\"schema\"");
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (start == std::string::npos || parser.parse(text.substr(start)).get(root)) {
    ADD_FAILURE() << "dsdiag compare " << run_dir << " printed no findings JSON:\n" << text;
    return {};
  }
  const trace::JsonValue all = trace::ToJsonValue(root);
  const trace::JsonValue* findings = all.Find("findings");
  if (findings == nullptr) {
    ADD_FAILURE() << "no findings array in:\n" << text;
    return {};
  }
  return findings->elements();
}

// ---- TmpfsMount ----------------------------------------------------------------------

TmpfsMount::TmpfsMount(std::string dir, size_t bytes) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  const std::string options = "size=" + std::to_string(bytes) + ",mode=0755";
  if (mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    error_ = "mount -t tmpfs -o " + options + " on " + dir_ + ": " + std::strerror(errno);
    return;
  }
  mounted_ = true;
}

TmpfsMount::~TmpfsMount() {
  // Lazily when busy: a rank that outlived its test must not keep the mount alive.
  if (mounted_ && umount2(dir_.c_str(), 0) != 0) umount2(dir_.c_str(), MNT_DETACH);
  std::error_code ec;
  fs::remove(dir_, ec);
}

// ---- NetnsPair -----------------------------------------------------------------------

namespace {

std::vector<std::string> ListNamespaces() {
  std::string out;
  RunCommand({"ip", "netns", "list"}, &out);
  std::vector<std::string> names;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    const std::string name = line.substr(0, line.find(' '));  // "name (id: 3)"
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

// The pid a namespace name of ours embeds, or -1.
pid_t OwnerPid(const std::string& ns) {
  const std::string prefix = NetnsPair::kPrefix;
  if (ns.rfind(prefix, 0) != 0) return -1;
  try {
    return static_cast<pid_t>(std::stol(ns.substr(prefix.size())));
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

NetnsPair::NetnsPair() {
  const pid_t pid = getpid();
  // A /24 of 10/8 picked from our pid: two test processes on one machine do not collide
  // (the namespaces are private anyway; this only keeps addresses apart in logs).
  const std::string subnet =
      "10." + std::to_string(100 + pid % 100) + "." + std::to_string((pid / 100) % 250) + ".";
  const std::string veth = "dsrb" + std::to_string(pid);
  for (int h = 0; h < 2; ++h) {
    ns_[h] = std::string(kPrefix) + std::to_string(pid) + "-" + static_cast<char>('a' + h);
    address_[h] = subnet + std::to_string(h + 1);
  }
  for (int h = 0; h < 2 && ok(); ++h) created_[h] = Run({"ip", "netns", "add", ns_[h]});
  if (!ok()) return;
  const std::string end[2] = {veth + "a", veth + "b"};
  if (!Run({"ip", "link", "add", end[0], "type", "veth", "peer", "name", end[1]})) return;
  for (int h = 0; h < 2 && ok(); ++h) {
    if (!Run({"ip", "link", "set", end[h], "netns", ns_[h]})) {
      RunCommand({"ip", "link", "del", end[h]});  // not moved yet: still ours to delete
      return;
    }
  }
  for (int h = 0; h < 2 && ok(); ++h) {
    Run({"ip", "-n", ns_[h], "link", "set", end[h], "name", kIfName}) &&
        Run({"ip", "-n", ns_[h], "addr", "add", address_[h] + "/24", "dev", kIfName}) &&
        Run({"ip", "-n", ns_[h], "link", "set", kIfName, "up"}) &&
        Run({"ip", "-n", ns_[h], "link", "set", "lo", "up"});
  }
}

NetnsPair::~NetnsPair() {
  for (int h = 0; h < 2; ++h)
    if (created_[h]) Remove(ns_[h]);
}

bool NetnsPair::Run(const std::vector<std::string>& argv) {
  std::string out;
  if (RunCommand(argv, &out) == 0) return true;
  std::string command;
  for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
  error_ = "`" + command + "` failed: " + out;
  return false;
}

bool NetnsPair::CutLink(int host) const {
  return RunCommand({"ip", "-n", ns_[host], "link", "set", kIfName, "down"}) == 0;
}

void NetnsPair::Remove(const std::string& ns) {
  std::string pids;
  RunCommand({"ip", "netns", "pids", ns}, &pids);
  std::istringstream in(pids);
  long pid = 0;
  while (in >> pid) kill(static_cast<pid_t>(pid), SIGKILL);
  RunCommand({"ip", "netns", "del", ns});
}

void NetnsPair::RemoveLeftovers() {
  for (const std::string& ns : ListNamespaces()) {
    const pid_t owner = OwnerPid(ns);
    if (owner <= 0 || owner == getpid()) continue;
    if (kill(owner, 0) == 0 || errno == EPERM) continue;  // its test is still running
    Remove(ns);
  }
}

}  // namespace dsdiag::robustness_test
