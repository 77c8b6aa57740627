// A minimal NVTX tool for the probes tests: loaded by NVTX3 through NVTX_INJECTION64_PATH,
// it records every domain creation, string registration, range push/pop and mark into the
// file named by DSDIAG_NVTX_RECORD, one tab-separated line per event:
//
//   create    <thread> <domain>
//   register  <thread> <domain> <text>
//   push      <thread> <domain> <level> <ascii|registered> <text>
//   pop       <thread> <domain> <level> <text of the range it closes>
//   mark      <thread> <domain> <ascii|registered> <text>
//   start     <thread> <domain> <id> <ascii|registered> <text>
//   end       <thread> <domain> <id> <text of the range it closes>
//
// A start/end range (an asynchronous op's: it may end on another thread) is keyed by the id
// the tool hands out at its start.
// <thread> is a small index in order of first appearance (0 = the first thread to call
// NVTX); <level> is the 0-based nesting level, the value NVTX returns to the caller.
// Events in NVTX's default domain are recorded with domain "(default)", so a probe that
// forgot its domain shows up as a mismatch rather than as silence.
//
// How injection works (nvtxDetail/nvtxInit.h): on the first NVTX call the application
// dlopens this library and calls InitializeInjectionNvtx2(getExportTable). The tool asks
// the export table for the callback tables of the modules it handles (CORE, CORE2) and
// writes its own functions into the slots; every slot left empty becomes a no-op.
#define NVTX_NO_IMPL  // a tool needs the types, not the client-side implementation
#include <nvtx3/nvToolsExt.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Domain {
  std::string name;
};

struct RegisteredString {
  std::string text;
};

std::mutex g_mutex;          // guards the file
std::FILE* g_out = nullptr;  // the record file, open for the process's lifetime
std::atomic<int> g_next_thread{0};

int ThreadIndex() {
  thread_local int index = g_next_thread.fetch_add(1);
  return index;
}

std::string DomainName(nvtxDomainHandle_t domain) {
  if (domain == nullptr) return "(default)";
  return reinterpret_cast<const Domain*>(domain)->name;
}

// The open ranges of this thread, per domain: pops name the range they close.
std::vector<std::string>& Stack(nvtxDomainHandle_t domain) {
  thread_local std::map<nvtxDomainHandle_t, std::vector<std::string>> stacks;
  return stacks[domain];
}

void Record(const std::string& line) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fputs(line.c_str(), g_out);
  std::fputc('\n', g_out);
  std::fflush(g_out);  // the application may exit without running destructors
}

std::string Join(std::initializer_list<std::string> fields) {
  std::string line;
  for (const std::string& f : fields) {
    if (!line.empty()) line.push_back('\t');
    line += f;
  }
  return line;
}

// The text of an event and how it was passed.
std::pair<std::string, std::string> Message(const nvtxEventAttributes_t* event) {
  if (event == nullptr) return {"null-attributes", ""};
  switch (event->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return {"ascii", event->message.ascii != nullptr ? event->message.ascii : "(null)"};
    case NVTX_MESSAGE_TYPE_REGISTERED:
      if (event->message.registered == nullptr) return {"registered", "(null)"};
      return {"registered",
              reinterpret_cast<const RegisteredString*>(event->message.registered)->text};
    default:
      return {"type-" + std::to_string(event->messageType), ""};
  }
}

nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  auto* domain = new Domain{name != nullptr ? name : "(null)"};  // lives until exit
  Record(Join({"create", std::to_string(ThreadIndex()), domain->name}));
  return reinterpret_cast<nvtxDomainHandle_t>(domain);
}

nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t domain, const char* text) {
  auto* s = new RegisteredString{text != nullptr ? text : "(null)"};  // lives until exit
  Record(Join({"register", std::to_string(ThreadIndex()), DomainName(domain), s->text}));
  return reinterpret_cast<nvtxStringHandle_t>(s);
}

int NVTX_API DomainRangePushEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* event) {
  auto [how, text] = Message(event);
  std::vector<std::string>& stack = Stack(domain);
  const int level = static_cast<int>(stack.size());
  stack.push_back(text);
  Record(Join({"push", std::to_string(ThreadIndex()), DomainName(domain), std::to_string(level),
               how, text}));
  return level;
}

int NVTX_API DomainRangePop(nvtxDomainHandle_t domain) {
  std::vector<std::string>& stack = Stack(domain);
  if (stack.empty()) {
    Record(Join({"pop", std::to_string(ThreadIndex()), DomainName(domain), "-1", "(unbalanced)"}));
    return -1;
  }
  const int level = static_cast<int>(stack.size()) - 1;
  const std::string text = stack.back();
  stack.pop_back();
  Record(Join(
      {"pop", std::to_string(ThreadIndex()), DomainName(domain), std::to_string(level), text}));
  return level;
}

void NVTX_API DomainMarkEx(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* event) {
  auto [how, text] = Message(event);
  Record(Join({"mark", std::to_string(ThreadIndex()), DomainName(domain), how, text}));
}

// Default-domain variants, recorded so that a misrouted probe is visible.
std::mutex g_ranges_mutex;
std::map<nvtxRangeId_t, std::string> g_open_ranges;  // start/end ranges not yet ended
std::atomic<nvtxRangeId_t> g_next_range{1};

nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t domain,
                                          const nvtxEventAttributes_t* event) {
  const auto [how, text] = Message(event);
  const nvtxRangeId_t id = g_next_range++;
  {
    std::lock_guard<std::mutex> lock(g_ranges_mutex);
    g_open_ranges[id] = text;
  }
  Record(Join(
      {"start", std::to_string(ThreadIndex()), DomainName(domain), std::to_string(id), how, text}));
  return id;
}

void NVTX_API DomainRangeEnd(nvtxDomainHandle_t domain, nvtxRangeId_t id) {
  std::string text = "(unknown id)";
  {
    std::lock_guard<std::mutex> lock(g_ranges_mutex);
    if (auto it = g_open_ranges.find(id); it != g_open_ranges.end()) {
      text = it->second;
      g_open_ranges.erase(it);
    }
  }
  Record(
      Join({"end", std::to_string(ThreadIndex()), DomainName(domain), std::to_string(id), text}));
}

int NVTX_API RangePushEx(const nvtxEventAttributes_t* event) {
  return DomainRangePushEx(nullptr, event);
}
int NVTX_API RangePushA(const char* text) {
  nvtxEventAttributes_t event{};
  event.messageType = NVTX_MESSAGE_TYPE_ASCII;
  event.message.ascii = text;
  return DomainRangePushEx(nullptr, &event);
}
int NVTX_API RangePop() { return DomainRangePop(nullptr); }
void NVTX_API MarkEx(const nvtxEventAttributes_t* event) { DomainMarkEx(nullptr, event); }
void NVTX_API MarkA(const char* text) {
  nvtxEventAttributes_t event{};
  event.messageType = NVTX_MESSAGE_TYPE_ASCII;
  event.message.ascii = text;
  DomainMarkEx(nullptr, &event);
}

template <typename Fn>
bool Install(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (table == nullptr || id >= size || table[id] == nullptr) return false;
  *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
  return true;
}

bool InstallCore(const NvtxExportTableCallbacks* callbacks) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size)) return false;
  return Install(table, size, NVTX_CBID_CORE_RangePushEx, &RangePushEx) &&
         Install(table, size, NVTX_CBID_CORE_RangePushA, &RangePushA) &&
         Install(table, size, NVTX_CBID_CORE_RangePop, &RangePop) &&
         Install(table, size, NVTX_CBID_CORE_MarkEx, &MarkEx) &&
         Install(table, size, NVTX_CBID_CORE_MarkA, &MarkA);
}

bool InstallCore2(const NvtxExportTableCallbacks* callbacks) {
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return false;
  return Install(table, size, NVTX_CBID_CORE2_DomainCreateA, &DomainCreateA) &&
         Install(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, &DomainRegisterStringA) &&
         Install(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &DomainRangePushEx) &&
         Install(table, size, NVTX_CBID_CORE2_DomainRangePop, &DomainRangePop) &&
         Install(table, size, NVTX_CBID_CORE2_DomainMarkEx, &DomainMarkEx) &&
         Install(table, size, NVTX_CBID_CORE2_DomainRangeStartEx, &DomainRangeStartEx) &&
         Install(table, size, NVTX_CBID_CORE2_DomainRangeEnd, &DomainRangeEnd);
}

}  // namespace

// The entry point NVTX looks up by name; returning 0 makes NVTX unload the library and
// turn every call into a no-op.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const char* path = std::getenv("DSDIAG_NVTX_RECORD");
  if (path == nullptr || *path == '\0') {
    std::fprintf(stderr, "nvtx recorder: DSDIAG_NVTX_RECORD is not set; not attaching\n");
    return 0;
  }
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr) return 0;
  // "%p" in the path becomes the pid, so that every rank of a run records its own file.
  std::string file = path;
  if (auto at = file.find("%p"); at != std::string::npos)
    file.replace(at, 2, std::to_string(getpid()));
  g_out = std::fopen(file.c_str(), "w");
  if (g_out == nullptr) {
    std::fprintf(stderr, "nvtx recorder: cannot open %s\n", file.c_str());
    return 0;
  }
  // Line-buffered: a rank that leaves through _exit still leaves every event it saw.
  std::setvbuf(g_out, nullptr, _IOLBF, 0);
  if (!InstallCore(callbacks) || !InstallCore2(callbacks)) {
    std::fprintf(stderr, "nvtx recorder: the NVTX callback tables are not as expected\n");
    return 0;
  }
  return 1;
}
