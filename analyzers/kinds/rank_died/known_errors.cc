#include "analyzers/kinds/rank_died/known_errors.h"

#include <set>
#include <vector>

namespace dsdiag::analyzers::rank_died {
namespace {

constexpr std::string_view kModulePrefix = "module.";

// The double-quoted names on the line that starts with `label` in load_state_dict's
// message ("Missing key(s) in state_dict: "a", "b". ").
std::vector<std::string> QuotedNamesAfter(std::string_view message, std::string_view label) {
  std::vector<std::string> names;
  const size_t at = message.find(label);
  if (at == std::string_view::npos) return names;
  const size_t end = message.find('\n', at);
  std::string_view line =
      message.substr(at + label.size(), end == std::string_view::npos ? end : end - at);
  while (true) {
    const size_t open = line.find('"');
    if (open == std::string_view::npos) break;
    const size_t close = line.find('"', open + 1);
    if (close == std::string_view::npos) break;
    names.emplace_back(line.substr(open + 1, close - open - 1));
    line.remove_prefix(close + 1);
  }
  return names;
}

// Some key on one side is another's with DDP's `module.` prefix added: the state_dict of
// the DistributedDataParallel wrapper loaded into the bare module, or the reverse.
bool DiffersByModulePrefix(const std::vector<std::string>& missing,
                           const std::vector<std::string>& unexpected) {
  const std::set<std::string> missing_set(missing.begin(), missing.end());
  const std::set<std::string> unexpected_set(unexpected.begin(), unexpected.end());
  auto stripped_in = [](const std::string& key, const std::set<std::string>& other) {
    return key.compare(0, kModulePrefix.size(), kModulePrefix) == 0 &&
           other.count(key.substr(kModulePrefix.size())) > 0;
  };
  for (const std::string& key : unexpected)
    if (stripped_in(key, missing_set)) return true;
  for (const std::string& key : missing)
    if (stripped_in(key, unexpected_set)) return true;
  return false;
}

std::optional<KnownError> ModulePrefix(std::string_view message) {
  if (message.find("state_dict") == std::string_view::npos) return std::nullopt;
  if (!DiffersByModulePrefix(QuotedNamesAfter(message, "Missing key(s) in state_dict:"),
                             QuotedNamesAfter(message, "Unexpected key(s) in state_dict:")))
    return std::nullopt;
  return KnownError{
      "ddp-module-prefix",
      "The checkpoint's keys and the model's differ only by DDP's `module.` prefix: the "
      "state_dict was saved from the DistributedDataParallel wrapper (model.state_dict()) and "
      "loaded into the bare module, or the reverse. Save model.module.state_dict(), or strip "
      "the prefix before loading (torch.nn.modules.utils."
      "consume_prefix_in_state_dict_if_present(state_dict, \"module.\"))."};
}

std::optional<KnownError> MapLocation(std::string_view message) {
  // 1.13: "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is
  // False"; 2.x also "... on CUDA device 3 but torch.cuda.device_count() is 2".
  if (message.find("Attempting to deserialize object on") == std::string_view::npos)
    return std::nullopt;
  return KnownError{
      "map-location",
      "torch.load met tensors saved on a device this rank does not have (a checkpoint "
      "written on cuda:N, read where there is no such GPU). Pass map_location: \"cpu\", or "
      "the rank's own device (f\"cuda:{local_rank}\"); without it every rank loads onto the "
      "device the saving rank used."};
}

}  // namespace

std::optional<KnownError> RecogniseKnownError(std::string_view message) {
  if (auto known = ModulePrefix(message)) return known;
  if (auto known = MapLocation(message)) return known;
  return std::nullopt;
}

}  // namespace dsdiag::analyzers::rank_died
