// NVTX ranges and marks in the "dsdiag" domain, so that Nsight Systems (or any NVTX tool)
// shows the trainer's steps and phases beside the CUDA kernels they launch.
//
// Built with DSDIAG_HAVE_NVTX=1 (CMake finds the CUDA toolkit's nvtx3 headers) the calls
// go to the NVTX3 C API. NVTX3 is header-only: nothing is linked; the first call looks for
// a tool in NVTX_INJECTION64_PATH and, with none attached, every later call is one load
// and one branch. Without DSDIAG_HAVE_NVTX every function below is an inline no-op.
//
//   dsdiag::probes::nvtx::ScopedRange range("forward");     // ad-hoc name
//   DSDIAG_NVTX_RANGE("optimizer");   // name registered once per call site, hot-path safe
//
// Nothing here throws, allocates per event or needs a CUDA device. Names must be
// NUL-terminated strings that outlive the call (string literals in practice).
#pragma once

#include <cstddef>
#include <cstdint>

namespace dsdiag::probes::nvtx {

// A name registered once with the domain (nvtxDomainRegisterStringA): events then pass a
// handle instead of the text. Meant to be a function-local static, as DSDIAG_NVTX_RANGE
// makes it. Registration happens in the constructor; `name` must outlive the object.
class RegisteredName {
 public:
#if defined(DSDIAG_HAVE_NVTX) && DSDIAG_HAVE_NVTX
  explicit RegisteredName(const char* name) noexcept;
#else
  // Constant-initialised: a static one costs no guard when NVTX is off.
  explicit constexpr RegisteredName(const char* name) noexcept : name_(name) {}
#endif
  RegisteredName(const RegisteredName&) = delete;
  RegisteredName& operator=(const RegisteredName&) = delete;

  const char* name() const noexcept { return name_; }
  // The NVTX string handle; null when NVTX is not compiled in or registration failed.
  const void* handle() const noexcept { return handle_; }

 private:
  const char* name_;
  const void* handle_ = nullptr;
};

#if defined(DSDIAG_HAVE_NVTX) && DSDIAG_HAVE_NVTX

constexpr bool CompiledIn() noexcept { return true; }
void PushRange(const char* name) noexcept;
void PushRange(const RegisteredName& name) noexcept;
void PopRange() noexcept;
void Mark(const char* message) noexcept;
// A range that need not nest on one thread (an asynchronous op's: issued on one thread,
// completed on the backend's): StartRange returns its id, EndRange closes it from any thread.
// 0 is no range (no tool attached, or NVTX not compiled in); EndRange(0) does nothing.
uint64_t StartRange(const char* name) noexcept;
void EndRange(uint64_t id) noexcept;

#else  // NVTX not compiled in: everything below compiles to nothing.

constexpr bool CompiledIn() noexcept { return false; }
inline void PushRange(const char*) noexcept {}
inline void PushRange(const RegisteredName&) noexcept {}
inline void PopRange() noexcept {}
inline void Mark(const char*) noexcept {}
inline uint64_t StartRange(const char*) noexcept { return 0; }
inline void EndRange(uint64_t) noexcept {}

#endif

// Pushes a range on construction and pops it on destruction. It can only live on the
// stack (no copy, no move, no operator new), so every push has its pop on every path.
class ScopedRange {
 public:
  explicit ScopedRange(const char* name) noexcept { PushRange(name); }
  explicit ScopedRange(const RegisteredName& name) noexcept { PushRange(name); }
  ~ScopedRange() { PopRange(); }

  ScopedRange(const ScopedRange&) = delete;
  ScopedRange& operator=(const ScopedRange&) = delete;
  ScopedRange(ScopedRange&&) = delete;
  ScopedRange& operator=(ScopedRange&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;
};

}  // namespace dsdiag::probes::nvtx

#define DSDIAG_NVTX_CONCAT_INNER(a, b) a##b
#define DSDIAG_NVTX_CONCAT(a, b) DSDIAG_NVTX_CONCAT_INNER(a, b)

// A range named `literal` from here to the end of the enclosing scope. The name is
// registered on the first pass through the call site (thread-safe static init).
#define DSDIAG_NVTX_RANGE(literal)                                                           \
  static const ::dsdiag::probes::nvtx::RegisteredName DSDIAG_NVTX_CONCAT(dsdiag_nvtx_name_,  \
                                                                         __LINE__)(literal); \
  const ::dsdiag::probes::nvtx::ScopedRange DSDIAG_NVTX_CONCAT(                              \
      dsdiag_nvtx_range_, __LINE__)(DSDIAG_NVTX_CONCAT(dsdiag_nvtx_name_, __LINE__))
