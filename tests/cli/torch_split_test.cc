// `dsdiag` never loads LibTorch; the commands that need it hand over to dsdiag-torch beside
// it (cli/torch_part.h), and without one they say so instead of failing obscurely.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/support/shell.h"
#include "tests/support/temp_dir.h"

namespace dsdiag::cli {
namespace {

using test_support::Quote;
using test_support::RunShell;

// The libraries the dynamic loader maps for `binary`, as ldd lists them.
std::string LinkedLibraries(const std::string& binary) {
  const test_support::CommandResult r = RunShell("ldd " + Quote(binary));
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out;
}

TEST(TorchSplit, DsdiagDoesNotLinkLibTorch) {
  const std::string libs = LinkedLibraries(DSDIAG_BINARY);
  EXPECT_NE(libs.find("libc.so"), std::string::npos) << libs;  // ldd did list something
  EXPECT_EQ(libs.find("libtorch"), std::string::npos) << libs;
  EXPECT_EQ(libs.find("libc10"), std::string::npos) << libs;
}

TEST(TorchSplit, DsdiagTorchBesideItLinksLibTorchWhenBuilt) {
  const std::filesystem::path torch =
      std::filesystem::path(DSDIAG_BINARY).parent_path() / "dsdiag-torch";
  if (!std::filesystem::exists(torch)) GTEST_SKIP() << "built without LibTorch";
  EXPECT_NE(LinkedLibraries(torch.string()).find("libtorch"), std::string::npos);
}

// A dsdiag alone (copied away from dsdiag-torch): every command but train and loader-sweep
// works; those two exit 2 naming what is missing.
TEST(TorchSplit, WithoutDsdiagTorchTrainAndLoaderSweepSaySo) {
  test_support::TempDir dir("torch-split");
  const std::string alone = dir / "dsdiag";
  std::filesystem::copy_file(DSDIAG_BINARY, alone);
  const std::string run = dir / "run";
  for (const std::string& args :
       {"train --nproc 2 --steps 2 --out " + run, "train --steps 2 --out " + run,
        std::string("loader-sweep --workers 0 --batches 1")}) {
    SCOPED_TRACE(args);
    const test_support::CommandResult r = RunShell(Quote(alone) + " " + args);
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_NE(r.err.find("built without LibTorch (no dsdiag-torch beside it)"), std::string::npos)
        << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(run + "/rank-00000.jsonl"));
  const test_support::CommandResult synth =
      RunShell(Quote(alone) + " synth --ranks 2 --steps 3 --out " + Quote(run));
  EXPECT_EQ(synth.status, 0) << synth.err;
  const test_support::CommandResult compare = RunShell(Quote(alone) + " compare " + Quote(run));
  EXPECT_EQ(compare.status, 0) << compare.out << compare.err;
}

}  // namespace
}  // namespace dsdiag::cli
