#include "trainer/torch/checkpoint.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "trainer/torch/error_text.h"
#include "trainer/torch/grad_sync.h"
#include "trainer/torch/tensor_hash.h"

namespace dsdiag::trainer {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModulePrefix = "module.";

torch::Tensor Int(int64_t v) { return torch::tensor(v, torch::kLong); }
torch::Tensor Real(double v) { return torch::tensor(v, torch::kDouble); }

int64_t ReadInt(torch::serialize::InputArchive& archive, const char* key) {
  torch::Tensor t;
  archive.read(key, t);
  return t.item<int64_t>();
}

double ReadReal(torch::serialize::InputArchive& archive, const char* key) {
  torch::Tensor t;
  archive.read(key, t);
  return t.item<double>();
}

// The step of a "step-00000010.pt" file name.
std::optional<int64_t> StepOfFileName(const std::string& name) {
  long long step = 0;
  int consumed = 0;
  if (std::sscanf(name.c_str(), "step-%lld.pt%n", &step, &consumed) == 1 &&
      consumed == static_cast<int>(name.size())) {
    return step;
  }
  return std::nullopt;
}

}  // namespace

std::string CheckpointPath(const std::string& run_dir, int64_t step) {
  char name[40];
  std::snprintf(name, sizeof name, "step-%08lld.pt", static_cast<long long>(step));
  return (fs::path(run_dir) / "checkpoints" / name).string();
}

SaveResult SaveCheckpoint(const std::string& path, const std::string& temp_suffix,
                          const ModelParams& params, torch::optim::Optimizer& optimizer,
                          const CheckpointState& state) {
  torch::serialize::OutputArchive archive;
  torch::serialize::OutputArchive model;
  for (size_t i = 0; i < params.size(); ++i) {
    model.write(params.names[i], params.tensors[i].detach().to(torch::kCPU));
  }
  archive.write("model", model);

  torch::serialize::OutputArchive optim;
  optimizer.save(optim);
  archive.write("optimizer", optim);

  torch::serialize::OutputArchive train;
  train.write("step", Int(state.position.step));
  train.write("epoch", Int(state.position.epoch));
  train.write("epoch_batches", Int(state.position.epoch_batches));
  train.write("sampler_epoch", Int(state.position.sampler_epoch));
  train.write("world_size", Int(state.world_size));
  train.write("seed", Int(state.seed));
  archive.write("train", train);

  torch::serialize::OutputArchive scaler;
  scaler.write("scale", Real(state.scale));
  scaler.write("growth_tracker", Int(state.growth_tracker));
  archive.write("scaler", scaler);

  const std::string temp = path + temp_suffix;
  try {
    fs::create_directories(fs::path(path).parent_path());
    archive.save_to(temp);
  } catch (const std::exception& e) {
    throw CheckpointError("writing checkpoint " + temp + " failed: " + ErrorText(e));
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    throw CheckpointError("renaming " + temp + " to " + path + " failed: " + std::strerror(errno));
  }
  SaveResult result;
  std::error_code ec;
  result.bytes = static_cast<int64_t>(fs::file_size(path, ec));
  result.model_hash = HashTensors(params.tensors);
  return result;
}

LoadResult LoadCheckpoint(const std::string& path, const ModelParams& params,
                          torch::optim::Optimizer& optimizer) {
  LoadResult result;
  std::error_code exists_error;
  if (!fs::is_regular_file(path, exists_error)) {
    throw CheckpointError("checkpoint " + path + " does not exist (or is not a file)");
  }
  torch::serialize::InputArchive archive;
  torch::serialize::InputArchive model;
  try {
    archive.load_from(path, torch::Device(torch::kCPU));
    archive.read("model", model);
  } catch (const std::exception& e) {
    throw CheckpointError("cannot read checkpoint " + path + ": " + ErrorText(e));
  }
  std::error_code ec;
  result.bytes = static_cast<int64_t>(fs::file_size(path, ec));

  std::vector<std::string> keys = model.keys();
  std::set<std::string> unused(keys.begin(), keys.end());
  {
    torch::NoGradGuard no_grad;
    for (size_t i = 0; i < params.size(); ++i) {
      const std::string& name = params.names[i];
      // A model saved from inside a DataParallel / DDP wrapper carries a `module.` prefix.
      std::string key = name;
      if (!unused.count(key) && unused.count(kModulePrefix + name)) {
        key = kModulePrefix + name;
        result.prefix_stripped = true;
      }
      if (!unused.count(key)) {
        result.missing.push_back(name);
        continue;
      }
      torch::Tensor value;
      model.read(key, value);
      unused.erase(key);
      const torch::Tensor& param = params.tensors[i];
      if (value.sizes() != param.sizes()) {
        throw CheckpointError("checkpoint " + path + ": " + key + " has shape " +
                              c10::str(value.sizes()) + ", the model expects " +
                              c10::str(param.sizes()));
      }
      param.detach().copy_(value);
    }
  }
  result.unexpected.assign(unused.begin(), unused.end());

  try {
    torch::serialize::InputArchive optim, train, scaler;
    archive.read("optimizer", optim);
    optimizer.load(optim);
    archive.read("train", train);
    result.state.position.step = ReadInt(train, "step");
    result.state.position.epoch = ReadInt(train, "epoch");
    result.state.position.epoch_batches = ReadInt(train, "epoch_batches");
    result.state.position.sampler_epoch = ReadInt(train, "sampler_epoch");
    result.state.world_size = ReadInt(train, "world_size");
    result.state.seed = ReadInt(train, "seed");
    archive.read("scaler", scaler);
    result.state.scale = ReadReal(scaler, "scale");
    result.state.growth_tracker = ReadInt(scaler, "growth_tracker");
  } catch (const std::exception& e) {
    throw CheckpointError("checkpoint " + path + " lacks the training state: " + ErrorText(e));
  }
  result.model_hash = HashTensors(params.tensors);
  return result;
}

std::string OlderCheckpoint(const std::string& path) {
  const fs::path current(path);
  const std::optional<int64_t> step = StepOfFileName(current.filename().string());
  if (!step) return "";
  std::error_code ec;
  std::string best;
  int64_t best_step = -1;
  for (const fs::directory_entry& entry : fs::directory_iterator(current.parent_path(), ec)) {
    const std::optional<int64_t> s = StepOfFileName(entry.path().filename().string());
    if (s && *s<*step&& * s> best_step) {
      best_step = *s;
      best = entry.path().string();
    }
  }
  return best;
}

}  // namespace dsdiag::trainer
