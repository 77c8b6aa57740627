// NVTX3 calls behind probes/nvtx.h. Compiled to nothing without DSDIAG_HAVE_NVTX (the
// header then provides inline no-ops).
//
// Every event goes to the "dsdiag" domain rather than NVTX's default domain, so a user can
// filter dsdiag's ranges in or out in Nsight Systems without touching their own. The
// domain is created on the first event; that first call is also when NVTX looks for a
// tool (NVTX_INJECTION64_PATH) and, with none, turns every later call into a no-op.
#include "probes/nvtx.h"

#if defined(DSDIAG_HAVE_NVTX) && DSDIAG_HAVE_NVTX

// The nvtx3 headers are third-party code with their own warning profile.
#define NVTX_AS_SYSTEM_HEADER
#include <nvtx3/nvToolsExt.h>

namespace dsdiag::probes::nvtx {
namespace {

constexpr char kDomainName[] = "dsdiag";

// Function-local static: created once, lazily, and C++ makes the first call thread-safe.
nvtxDomainHandle_t Domain() noexcept {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA(kDomainName);
  return domain;
}

nvtxEventAttributes_t BlankEvent() noexcept {
  nvtxEventAttributes_t event{};
  event.version = NVTX_VERSION;
  event.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  return event;
}

// A null name would reach the tool as a null C string; tools are entitled to crash on it.
nvtxEventAttributes_t AsciiEvent(const char* text) noexcept {
  nvtxEventAttributes_t event = BlankEvent();
  event.messageType = NVTX_MESSAGE_TYPE_ASCII;
  event.message.ascii = text != nullptr ? text : "";
  return event;
}

}  // namespace

RegisteredName::RegisteredName(const char* name) noexcept
    : name_(name != nullptr ? name : ""), handle_(nvtxDomainRegisterStringA(Domain(), name_)) {}

void PushRange(const char* name) noexcept {
  const nvtxEventAttributes_t event = AsciiEvent(name);
  nvtxDomainRangePushEx(Domain(), &event);
}

void PushRange(const RegisteredName& name) noexcept {
  // A tool that does not implement string registration hands back null: send the text.
  if (name.handle() == nullptr) return PushRange(name.name());
  nvtxEventAttributes_t event = BlankEvent();
  event.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  event.message.registered = static_cast<nvtxStringHandle_t>(const_cast<void*>(name.handle()));
  nvtxDomainRangePushEx(Domain(), &event);
}

void PopRange() noexcept { nvtxDomainRangePop(Domain()); }

uint64_t StartRange(const char* name) noexcept {
  const nvtxEventAttributes_t event = AsciiEvent(name);
  return nvtxDomainRangeStartEx(Domain(), &event);
}

void EndRange(uint64_t id) noexcept {
  if (id != 0) nvtxDomainRangeEnd(Domain(), id);
}

void Mark(const char* message) noexcept {
  const nvtxEventAttributes_t event = AsciiEvent(message);
  nvtxDomainMarkEx(Domain(), &event);
}

}  // namespace dsdiag::probes::nvtx

#endif  // DSDIAG_HAVE_NVTX
