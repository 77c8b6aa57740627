// FUZZ_CHECK: the invariant checks of the fuzz targets. A violated one prints what was
// expected and traps, so libFuzzer reports it as a crash and saves the input.
#pragma once

#include <cstdio>

#define FUZZ_CHECK(condition, ...)                                                            \
  do {                                                                                        \
    if (!(condition)) {                                                                       \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: ", __FILE__, __LINE__, #condition); \
      std::fprintf(stderr, __VA_ARGS__);                                                      \
      std::fputc('\n', stderr);                                                               \
      __builtin_trap();                                                                       \
    }                                                                                         \
  } while (0)
