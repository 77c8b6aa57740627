// ReadDistEnv: torchrun, Slurm and Open MPI variables, their defaults, their precedence, and
// messages that name the variable at fault.
#include "launch/dist_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace dsdiag::launch {
namespace {

const char* const kAllVars[] = {"RANK",
                                "WORLD_SIZE",
                                "LOCAL_RANK",
                                "MASTER_ADDR",
                                "MASTER_PORT",
                                "DSDIAG_RUN_ID",
                                "SLURM_PROCID",
                                "SLURM_NTASKS",
                                "SLURM_LOCALID",
                                "OMPI_COMM_WORLD_RANK",
                                "OMPI_COMM_WORLD_SIZE",
                                "OMPI_COMM_WORLD_LOCAL_RANK",
                                "OMPI_COMM_WORLD_LOCAL_SIZE"};

class DistEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { Clear(); }
  void TearDown() override { Clear(); }
  static void Clear() {
    for (const char* name : kAllVars) unsetenv(name);
  }
  static void Set(const char* name, const char* value) { setenv(name, value, 1); }

  // The message of the invalid_argument ReadDistEnv throws ("" when it does not).
  static std::string ErrorOf() {
    try {
      ReadDistEnv();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(DistEnvTest, NoLauncherVariables) { EXPECT_FALSE(ReadDistEnv().has_value()); }

TEST_F(DistEnvTest, TorchrunWithDefaults) {
  Set("RANK", "2");
  Set("WORLD_SIZE", "4");
  const std::optional<DistEnv> env = ReadDistEnv();
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->source, "torchrun");
  EXPECT_EQ(env->rank, 2);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->local_rank, 2);
  EXPECT_EQ(env->master_addr, "127.0.0.1");
  EXPECT_EQ(env->master_port, 29500);
  EXPECT_EQ(env->run_id, "");
}

TEST_F(DistEnvTest, TorchrunExplicit) {
  Set("RANK", "5");
  Set("WORLD_SIZE", "8");
  Set("LOCAL_RANK", "1");
  Set("MASTER_ADDR", "node3");
  Set("MASTER_PORT", "4242");
  Set("DSDIAG_RUN_ID", "20261130-081500-4f2a");
  const std::optional<DistEnv> env = ReadDistEnv();
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->master_addr, "node3");
  EXPECT_EQ(env->master_port, 4242);
  EXPECT_EQ(env->run_id, "20261130-081500-4f2a");
}

TEST_F(DistEnvTest, TorchrunNeedsBoth) {
  Set("RANK", "0");
  EXPECT_EQ(ErrorOf(), "RANK is set but WORLD_SIZE is not; torchrun sets both");
  Clear();
  Set("WORLD_SIZE", "2");
  EXPECT_EQ(ErrorOf(), "WORLD_SIZE is set but RANK is not; torchrun sets both");
}

TEST_F(DistEnvTest, MalformedValuesNameTheVariable) {
  Set("RANK", "abc");
  Set("WORLD_SIZE", "4");
  EXPECT_EQ(ErrorOf(), "RANK='abc' is not an integer");
  Set("RANK", "4");
  EXPECT_EQ(ErrorOf(), "RANK=4 is out of range for WORLD_SIZE=4 (0..3)");
  Set("RANK", "-1");
  EXPECT_EQ(ErrorOf(), "RANK=-1 is out of range (0..1048576)");
  Set("RANK", "1");
  Set("WORLD_SIZE", "0");
  EXPECT_EQ(ErrorOf(), "WORLD_SIZE=0 is out of range (1..1048576)");
  Set("WORLD_SIZE", "4 ");
  EXPECT_EQ(ErrorOf(), "WORLD_SIZE='4 ' is not an integer");
  Set("WORLD_SIZE", "4");
  Set("LOCAL_RANK", "7");
  EXPECT_EQ(ErrorOf(), "LOCAL_RANK=7 is out of range (0..3)");
  Set("LOCAL_RANK", "1");
  Set("MASTER_PORT", "70000");
  EXPECT_EQ(ErrorOf(), "MASTER_PORT=70000 is out of range (1..65535)");
  Set("MASTER_PORT", "http");
  EXPECT_EQ(ErrorOf(), "MASTER_PORT='http' is not an integer");
}

TEST_F(DistEnvTest, Slurm) {
  Set("SLURM_PROCID", "3");
  Set("SLURM_NTASKS", "4");
  Set("SLURM_LOCALID", "1");
  Set("MASTER_ADDR", "node1");
  const std::optional<DistEnv> env = ReadDistEnv();
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->source, "slurm");
  EXPECT_EQ(env->rank, 3);
  EXPECT_EQ(env->world_size, 4);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->master_addr, "node1");
  EXPECT_EQ(env->master_port, 29500);
}

TEST_F(DistEnvTest, SlurmNeedsMasterAddr) {
  Set("SLURM_PROCID", "0");
  Set("SLURM_NTASKS", "2");
  const std::string message = ErrorOf();
  EXPECT_EQ(message.rfind("MASTER_ADDR is not set; under Slurm export it", 0), 0u) << message;
  EXPECT_NE(message.find("scontrol show hostnames"), std::string::npos) << message;
}

TEST_F(DistEnvTest, SlurmBatchScriptIsNotARank) {
  Set("SLURM_PROCID", "0");  // an sbatch script without --ntasks
  EXPECT_FALSE(ReadDistEnv().has_value());
}

TEST_F(DistEnvTest, SlurmChecksItsVariables) {
  Set("SLURM_PROCID", "4");
  Set("SLURM_NTASKS", "4");
  Set("MASTER_ADDR", "node1");
  EXPECT_EQ(ErrorOf(), "SLURM_PROCID=4 is out of range for SLURM_NTASKS=4 (0..3)");
}

TEST_F(DistEnvTest, TorchrunWinsOverSlurm) {
  Set("SLURM_PROCID", "0");
  Set("SLURM_NTASKS", "1");
  Set("RANK", "1");
  Set("WORLD_SIZE", "2");
  const std::optional<DistEnv> env = ReadDistEnv();
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->source, "torchrun");
  EXPECT_EQ(env->rank, 1);
}

TEST_F(DistEnvTest, OpenMpiSingleNode) {
  Set("OMPI_COMM_WORLD_RANK", "1");
  Set("OMPI_COMM_WORLD_SIZE", "2");
  Set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
  Set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  const std::optional<DistEnv> env = ReadDistEnv();
  ASSERT_TRUE(env.has_value());
  EXPECT_EQ(env->source, "openmpi");
  EXPECT_EQ(env->rank, 1);
  EXPECT_EQ(env->world_size, 2);
  EXPECT_EQ(env->local_rank, 1);
  EXPECT_EQ(env->master_addr, "127.0.0.1");
}

TEST_F(DistEnvTest, OpenMpiMultiNodeNeedsMasterAddr) {
  Set("OMPI_COMM_WORLD_RANK", "0");
  Set("OMPI_COMM_WORLD_SIZE", "4");
  Set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  EXPECT_NE(ErrorOf().find("MASTER_ADDR is not set; the Open MPI job spans several nodes"),
            std::string::npos)
      << ErrorOf();
  Set("MASTER_ADDR", "node0");
  ASSERT_TRUE(ReadDistEnv().has_value());
  EXPECT_EQ(ReadDistEnv()->master_addr, "node0");
}

TEST_F(DistEnvTest, OpenMpiNeedsBoth) {
  Set("OMPI_COMM_WORLD_SIZE", "4");
  EXPECT_EQ(ErrorOf(),
            "OMPI_COMM_WORLD_SIZE is set but OMPI_COMM_WORLD_RANK is not; mpirun sets both");
}

}  // namespace
}  // namespace dsdiag::launch
