// BackgroundWrite: buffers handed over are written in order, each handed back empty and as
// large as it was, and the write in flight is done by Wait or by the destructor.
#include "timeline/background_write.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

namespace dsdiag::timeline {
namespace {

TEST(BackgroundWrite, WritesWhatItIsHandedInOrder) {
  std::ostringstream out;
  std::string expected;
  {
    BackgroundWrite writes(&out, 64);
    EventBuffer buffer;
    buffer.Reserve(64);
    for (int i = 0; i < 1000; ++i) {
      const std::string text = "event " + std::to_string(i) + "\n";
      buffer.Append(text);
      expected += text;
      if (i % 7 == 6) {
        writes.Hand(&buffer);
        EXPECT_EQ(buffer.size(), 0u);  // the one written before, emptied
      }
    }
    writes.Hand(&buffer);
    writes.Wait();
    EXPECT_EQ(out.str(), expected);  // the stream is the caller's again
  }
  EXPECT_EQ(out.str(), expected);
}

TEST(BackgroundWrite, TheDestructorFinishesTheWriteInFlight) {
  std::ostringstream out;
  {
    BackgroundWrite writes(&out, 16);
    EventBuffer buffer;
    buffer.Append("last words\n");
    writes.Hand(&buffer);
  }
  EXPECT_EQ(out.str(), "last words\n");
}

TEST(BackgroundWrite, AWriteErrorIsLeftOnTheStream) {
  std::ostringstream out;
  out.setstate(std::ios::badbit);  // a full disk, as the stream would report it
  BackgroundWrite writes(&out, 16);
  EventBuffer buffer;
  buffer.Append("lost\n");
  writes.Hand(&buffer);
  writes.Wait();
  EXPECT_TRUE(out.bad());
}

}  // namespace
}  // namespace dsdiag::timeline
