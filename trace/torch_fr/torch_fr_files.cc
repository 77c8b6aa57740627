#include "trace/torch_fr/torch_fr_files.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <map>

#include "trace/run_files.h"

namespace dsdiag::trace {
namespace {

namespace fs = std::filesystem;

// Enough for the first keys of every layout: a pickle names "version" (or, torch 2.2, the
// first entry's keys) within its first bytes; JSON's sorted keys put "entries" or
// "pg_config" near the start.
constexpr size_t kSniffBytes = 4096;

// Keys every layout writes near its start, as they appear in the bytes of either form.
constexpr std::array<std::string_view, 5> kDumpKeys = {"version", "entries", "pg_config",
                                                       "pg_status", "profiling_name"};

bool Mentions(std::string_view head, std::string_view key, bool quoted) {
  if (!quoted) return head.find(key) != std::string_view::npos;
  const std::string needle = "\"" + std::string(key) + "\"";
  return head.find(needle) != std::string_view::npos;
}

bool IsDsdiagFile(std::string_view name) {
  return ParseRankTraceFileName(name).has_value() || ParseFlightDumpFileName(name).has_value();
}

std::string ReadHead(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(kSniffBytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(in ? head.size() : static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
  return head;
}

// Adds a file to its prefix's group, keeping the first name per rank.
void AddToGroup(TorchFrFile file, const std::string& prefix,
                std::map<std::string, TorchFrFileGroup>* groups) {
  TorchFrFileGroup& g = (*groups)[prefix];
  g.prefix = prefix;
  for (const TorchFrFile& other : g.files) {
    if (other.rank == file.rank) {
      g.duplicate_names.push_back(file.name);
      return;
    }
  }
  g.files.push_back(std::move(file));
}

}  // namespace

std::optional<TorchFrFileName> SplitTorchFrFileName(std::string_view name) {
  if (name.find('/') != std::string_view::npos) return std::nullopt;
  const std::optional<int> rank = TorchFrRankFromFileName(name);
  if (!rank) return std::nullopt;
  size_t start = name.size();
  while (start > 0 && name[start - 1] >= '0' && name[start - 1] <= '9') --start;
  return TorchFrFileName{std::string(name.substr(0, start)), *rank};
}

std::optional<TorchFrFormat> SniffTorchFrDump(std::string_view head) {
  const std::optional<TorchFrFormat> format = SniffTorchFrFormat(head);
  if (!format) return std::nullopt;
  const bool json = *format == TorchFrFormat::kJson;
  if (json && Mentions(head, "schema", true)) return std::nullopt;  // a dsdiag file
  for (const std::string_view key : kDumpKeys) {
    if (Mentions(head, key, json)) return format;
  }
  return std::nullopt;
}

TorchFrFindResult FindTorchFrDumps(const std::string& dir, const TorchFrFindOptions& options) {
  TorchFrFindResult result;
  std::error_code ec;
  std::vector<fs::path> paths;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec)) paths.push_back(it->path());
  }
  if (ec) {
    result.error = dir + ": " + ec.message();
    return result;
  }
  std::sort(paths.begin(), paths.end());  // names decide which duplicate is kept
  std::map<std::string, TorchFrFileGroup> groups;
  for (const fs::path& path : paths) {
    const std::string name = path.filename().string();
    const std::optional<TorchFrFileName> split = SplitTorchFrFileName(name);
    if (!split || name.front() == '.' || IsDsdiagFile(name)) continue;
    if (options.prefix && split->prefix != *options.prefix) continue;
    TorchFrFile file{path.string(), name, split->rank, SniffTorchFrDump(ReadHead(path.string()))};
    if (!file.format && !options.prefix) {
      result.not_dumps.push_back(name);
      continue;
    }
    AddToGroup(std::move(file), split->prefix, &groups);
  }
  for (auto& [prefix, group] : groups) {
    std::sort(group.files.begin(), group.files.end(),
              [](const TorchFrFile& a, const TorchFrFile& b) { return a.rank < b.rank; });
    result.groups.push_back(std::move(group));
  }
  return result;
}

}  // namespace dsdiag::trace
