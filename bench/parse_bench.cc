// The floor for `dsdiag compare`: a bare simdjson pass over the same trace files — load
// each file, parse every line with parse_many (full validation into a DOM tape), touch
// each record's "type". Prints the bytes read and the wall time; bench/run divides.
//
//   dsdiag_bench_parse FILE...
#include <simdjson.h>

#include <chrono>
#include <cstdint>
#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE...\n", argv[0]);
    return 2;
  }
  // Larger than any trace line (the params record is the largest, a few KiB).
  constexpr size_t kBatchBytes = size_t{4} << 20;
  simdjson::dom::parser parser;
  uint64_t bytes = 0, records = 0, typed = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 1; i < argc; ++i) {
    simdjson::padded_string text;
    if (auto err = simdjson::padded_string::load(argv[i]).get(text)) {
      std::fprintf(stderr, "%s: %s\n", argv[i], simdjson::error_message(err));
      return 1;
    }
    bytes += text.size();
    simdjson::dom::document_stream stream;
    if (auto err = parser.parse_many(text, kBatchBytes).get(stream)) {
      std::fprintf(stderr, "%s: %s\n", argv[i], simdjson::error_message(err));
      return 1;
    }
    for (auto doc : stream) {
      simdjson::dom::element e;
      if (doc.get(e)) {
        std::fprintf(stderr, "%s: record %llu is not valid JSON\n", argv[i],
                     static_cast<unsigned long long>(records + 1));
        return 1;
      }
      ++records;
      std::string_view type;
      if (!e["type"].get(type)) typed += type.size();
    }
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("bytes %llu\nseconds %.6f\nrecords %llu\n", static_cast<unsigned long long>(bytes),
              secs, static_cast<unsigned long long>(records));
  std::fprintf(stderr, "parse bench: %llu records, %llu type bytes\n",
               static_cast<unsigned long long>(records), static_cast<unsigned long long>(typed));
  return 0;
}
