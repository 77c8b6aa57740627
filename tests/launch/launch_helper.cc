// A stand-in rank for the launcher tests: behaves as its command line tells it, by rank.
//
//   launch_helper BEHAVIOUR_OF_RANK_0 [BEHAVIOUR_OF_RANK_1 ...]   (the last one repeats)
//
// Behaviours:
//   ok            exit 0 at once
//   exit=N        wait until every rank is ready, then exit N
//   sigkill       wait until every rank is ready, then SIGKILL itself
//   sleep         sleep until killed (SIGTERM kills it: default disposition)
//   ignore-term   ignore SIGTERM, then sleep until SIGKILLed
//   term-pipe     on SIGTERM, die of SIGPIPE instead (a rank killed writing to a dead peer)
//   grandchild    start a child that sleeps forever (pid in grandchild-R), then exit 0
//   env           write the launcher's variables and argv to env-R, then exit 0
// Every rank writes ready-R (holding its pid) to $HELPER_DIR once set up, so tests and the
// failing ranks can wait for the others without sleeping for a guessed time.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace {

std::string Dir() {
  const char* dir = std::getenv("HELPER_DIR");
  return dir != nullptr ? dir : ".";
}

int EnvInt(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : -1;
}

// Written then renamed, so a reader never sees a half-written file.
void WriteFile(const std::string& name, const std::string& text) {
  const std::string path = Dir() + "/" + name;
  {
    std::ofstream out(path + ".tmp");
    out << text;
  }
  std::rename((path + ".tmp").c_str(), path.c_str());
}

void WaitForAllReady(int world_size) {
  for (;;) {
    int ready = 0;
    for (int r = 0; r < world_size; ++r)
      ready += access((Dir() + "/ready-" + std::to_string(r)).c_str(), F_OK) == 0;
    if (ready == world_size) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

[[noreturn]] void SleepForever() {
  for (;;) pause();
}

std::string EnvLine(const char* name) {
  const char* v = std::getenv(name);
  return std::string(name) + "=" + (v != nullptr ? v : "<unset>") + "\n";
}

}  // namespace

int main(int argc, char** argv) {
  int rank = EnvInt("RANK");
  int world_size = EnvInt("WORLD_SIZE");
  if (rank < 0 && world_size < 0) {  // started without rank variables: a job of one process
    rank = 0;
    world_size = 1;
  }
  if (argc < 2 || rank < 0 || world_size < 1) {
    std::fprintf(stderr, "launch_helper: needs RANK, WORLD_SIZE and a behaviour\n");
    return 100;
  }
  const std::string behaviour = argv[std::min(rank + 1, argc - 1)];
  const std::string ready = "ready-" + std::to_string(rank);

  if (behaviour == "ignore-term") signal(SIGTERM, SIG_IGN);
  if (behaviour == "term-pipe") signal(SIGTERM, [](int) { raise(SIGPIPE); });
  if (behaviour == "grandchild") {
    const pid_t child = fork();
    if (child == 0) SleepForever();
    WriteFile("grandchild-" + std::to_string(rank), std::to_string(child));
  }
  if (behaviour == "env") {
    std::string text;
    for (const char* name : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                             "MASTER_PORT", "DSDIAG_RUN_ID", "OMP_NUM_THREADS", "HELPER_EXTRA"})
      text += EnvLine(name);
    for (int i = 1; i < argc; ++i) text += std::string("arg=") + argv[i] + "\n";
    WriteFile("env-" + std::to_string(rank), text);
  }
  WriteFile(ready, std::to_string(getpid()));

  if (behaviour == "ok" || behaviour == "grandchild" || behaviour == "env") return 0;
  if (behaviour.rfind("exit=", 0) == 0) {
    WaitForAllReady(world_size);
    return std::atoi(behaviour.c_str() + 5);
  }
  if (behaviour == "sigkill") {
    WaitForAllReady(world_size);
    raise(SIGKILL);
  }
  if (behaviour == "sleep" || behaviour == "ignore-term" || behaviour == "term-pipe") {
    SleepForever();
  }
  std::fprintf(stderr, "launch_helper: unknown behaviour '%s'\n", behaviour.c_str());
  return 101;
}
