#include "test/support/free_port.h"

#include <gtest/gtest.h>

#include <set>

namespace ker::testsupport {
namespace {

// A server and its health port are asked for back to back; the kernel may offer the same
// unbound port twice in a row, which once made a child fail to listen.
TEST(FreePortTest, NeverHandsOutAPortTwice) {
  std::set<int> seen;
  for (int i = 0; i < 500; ++i) {
    const int port = freePort();
    EXPECT_GT(port, 0);
    EXPECT_TRUE(seen.insert(port).second) << "port " << port << " handed out twice";
  }
}

}  // namespace
}  // namespace ker::testsupport
