// DriveParseAhead (analyzers/framework/parse_ahead.h): what the reading side sends on its
// thread reaches the driver thread's sink in the same order and with the same content,
// across many chunk hand-overs; an error on either side ends the drive without a hang, the
// reading side's where it happened in the sequence.
#include "analyzers/framework/parse_ahead.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "analyzers/framework/input_error.h"
#include "tests/analyzers/test_run.h"
#include "trace/trace_reader.h"

namespace dsdiag::analyzers {
namespace {

using testing::TestRun;

// Logs what it is sent; throws at the `throw_at`-th call (0: never).
class LoggingSink final : public DriveSink {
 public:
  explicit LoggingSink(size_t throw_at = 0) : throw_at_(throw_at) {}
  void Record(size_t rank, const trace::Record& r) override {
    Log("r" + std::to_string(rank) + " " + std::string(r.type()) + "@" + std::to_string(r.step()) +
        " line " + std::to_string(r.line()) + " ts " + std::to_string(r.ts()) + " epoch " +
        std::to_string(r.Int("epoch").value_or(-1)));
  }
  void RankEnded(size_t rank, const RankEnd& end) override {
    Log("end r" + std::to_string(rank) + " records " + std::to_string(end.records) + " " +
        end.reason);
  }
  void StepDone(int64_t step) override { Log("done " + std::to_string(step)); }
  void Progress(const DriveProgress& p) override {
    Log("progress " + std::to_string(p.step) + " " + std::to_string(p.bytes_read));
  }
  const std::vector<std::string>& log() const { return log_; }

 private:
  void Log(std::string line) {
    log_.push_back(std::move(line));
    if (log_.size() == throw_at_) throw std::runtime_error("sink gave up");
  }
  size_t throw_at_;
  std::vector<std::string> log_;
};

// A reading side over a small run: each rank's records, then its end, steps and progress
// between ranks.
struct RunReader {
  explicit RunReader(const std::string& dir, int ranks) : dir(dir), ranks(ranks) {}
  void operator()(DriveSink& sink) const {
    for (int rank = 0; rank < ranks; ++rank) {
      std::string error;
      auto reader =
          trace::TraceReader::Open(dir + "/rank-0000" + std::to_string(rank) + ".jsonl", &error);
      if (!reader) throw RunInputError(error);
      trace::Record r;
      RankEnd end;
      while (reader->Next(&r)) {
        sink.Record(static_cast<size_t>(rank), r);
        ++end.records;
        ++*sent;
      }
      end.reason = "rank " + std::to_string(rank);
      sink.RankEnded(static_cast<size_t>(rank), end);
      sink.StepDone(rank);
      sink.Progress({rank, reader->bytes_read()});
    }
  }
  std::string dir;
  int ranks;
  std::shared_ptr<std::atomic<int>> sent = std::make_shared<std::atomic<int>>(0);
};

TEST(ParseAheadTest, TheDriverThreadGetsTheSequenceOfTheReadingSide) {
  TestRun run;
  for (int r = 0; r < 3; ++r) run.WriteCleanRank(TestRun::Header(r, 3), 40);
  const RunReader read(run.dir(), 3);
  LoggingSink direct;
  read(direct);
  ASSERT_GT(direct.log().size(), 120u);
  // A chunk per record or so: every hand-over, and the reading side waiting on a full queue.
  for (size_t chunk_bytes : {size_t{1}, size_t{2048}, kChunkBytes}) {
    LoggingSink replayed;
    DriveParseAhead(read, replayed, chunk_bytes);
    EXPECT_EQ(replayed.log(), direct.log()) << "chunk bytes " << chunk_bytes;
  }
}

TEST(ParseAheadTest, AReadingErrorArrivesAfterWhatWasReadBeforeIt) {
  const auto read = [](DriveSink& sink) {
    for (int step = 0; step < 5; ++step) sink.StepDone(step);
    throw RunInputError("cannot read trace 'rank-00001.jsonl': gone");
  };
  LoggingSink sink;
  try {
    DriveParseAhead(read, sink);
    ADD_FAILURE() << "no error";
  } catch (const RunInputError& e) {
    EXPECT_STREQ(e.what(), "cannot read trace 'rank-00001.jsonl': gone");
  }
  EXPECT_EQ(sink.log(),
            (std::vector<std::string>{"done 0", "done 1", "done 2", "done 3", "done 4"}));
}

TEST(ParseAheadTest, AnErrorOnTheDriverThreadStopsTheReadingThread) {
  TestRun run;
  run.WriteCleanRank(TestRun::Header(0, 1), 400);
  const RunReader read(run.dir(), 1);
  LoggingSink sink(/*throw_at=*/3);
  EXPECT_THROW(DriveParseAhead(read, sink, /*chunk_bytes=*/1), std::runtime_error);
  EXPECT_EQ(sink.log().size(), 3u);
  // It stopped once every chunk was in flight, not at the end of the file.
  EXPECT_LE(*read.sent, static_cast<int>(kChunksInFlight) + 4);
}

}  // namespace
}  // namespace dsdiag::analyzers
