#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "bench/audit.h"

namespace ker::bench {
namespace {

using std::chrono::system_clock;

const std::string kUser = "system:serviceaccount:kube-system:extended-resource-scheduler";

// One audit event as kube-apiserver's log backend writes it (a JSON line, Metadata level).
std::string event(const std::string& user, const std::string& verb, const std::string& resource,
                  const std::string& subresource, const std::string& received,
                  const std::string& stage = "ResponseComplete") {
  std::string ref = R"({"resource":")" + resource + R"(","namespace":"bench-bind")";
  if (!subresource.empty()) {
    ref += R"(,"subresource":")" + subresource + R"(")";
  }
  ref += "}";
  return R"({"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":")" + stage +
         R"(","verb":")" + verb + R"(","user":{"username":")" + user +
         R"(","groups":["system:serviceaccounts"]},"objectRef":)" + ref +
         R"(,"responseStatus":{"code":200},"requestReceivedTimestamp":")" + received +
         R"(","stageTimestamp":")" + received + R"("})";
}

system_clock::time_point at(int hour, int minute, int second, int micros) {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 0;
  tm.tm_mday = 12;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  return system_clock::from_time_t(timegm(&tm)) + std::chrono::microseconds(micros);
}

class AuditTest : public testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/ker-audit-test.XXXXXX";
    const int fd = mkstemp(name);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = name;
  }
  void TearDown() override { std::remove(path_.c_str()); }
  void write(const std::vector<std::string>& lines) {
    std::ofstream out(path_);
    for (const auto& l : lines) {
      out << l << "\n";
    }
  }
  std::string path_;
};

TEST_F(AuditTest, CountsTheUsersCompletedRequestsInTheWindowByVerbAndResource) {
  write({
      event(kUser, "get", "extendedresourceclaims", "", "2026-01-12T09:41:27.100000Z"),
      event(kUser, "update", "extendedresources", "status", "2026-01-12T09:41:27.200000Z"),
      event(kUser, "update", "extendedresources", "status", "2026-01-12T09:41:27.300000Z"),
      event(kUser, "create", "pods", "binding", "2026-01-12T09:41:27.400000Z"),
      event(kUser, "list", "nodes", "", "2026-01-12T09:41:27.500000Z"),
      event(kUser, "patch", "events", "", "2026-01-12T09:41:27.600000Z"),
      event(kUser, "delete", "pods", "", "2026-01-12T09:41:27.700000Z"),
  });
  const RequestCount c = countRequests(path_, kUser, at(9, 41, 27, 0), at(9, 41, 28, 0));
  EXPECT_EQ(c.reads, 2u);
  EXPECT_EQ(c.writes, 5u);
  EXPECT_EQ(c.byKind.at("update extendedresources/status"), 2u);
  EXPECT_EQ(c.byKind.at("create pods/binding"), 1u);
  EXPECT_EQ(c.byKind.at("get extendedresourceclaims"), 1u);
  EXPECT_EQ(c.byKind.at("list nodes"), 1u);
  EXPECT_EQ(c.byKind.size(), 6u);
}

TEST_F(AuditTest, LeavesOutOtherUsersWatchesOtherStagesAndRequestsOutsideTheWindow) {
  write({
      // Another user whose name starts with this one's: the line matches as text only.
      event(kUser + "-standby", "update", "extendedresources", "status",
            "2026-01-12T09:41:27.100000Z"),
      event("system:admin", "update", "extendedresources", "status", "2026-01-12T09:41:27.100000Z"),
      event(kUser, "watch", "extendedresources", "", "2026-01-12T09:41:27.100000Z"),
      event(kUser, "update", "extendedresources", "status", "2026-01-12T09:41:27.100000Z",
            "RequestReceived"),
      event(kUser, "update", "extendedresources", "status", "2026-01-12T09:41:26.999999Z"),
      event(kUser, "update", "extendedresources", "status", "2026-01-12T09:41:28.000001Z"),
      "not json " + kUser,
      R"({"stage":"ResponseComplete","user":{"username":")" + kUser + R"("},"verb":)",
      // Counted: on the window's edges (inclusive), one with no fraction of a second.
      event(kUser, "update", "extendedresources", "status", "2026-01-12T09:41:27.000000Z"),
      event(kUser, "update", "extendedresources", "status", "2026-01-12T09:41:28Z"),
  });
  const RequestCount c = countRequests(path_, kUser, at(9, 41, 27, 0), at(9, 41, 28, 0));
  EXPECT_EQ(c.reads, 0u);
  EXPECT_EQ(c.writes, 2u);
}

TEST_F(AuditTest, ReadsTheFractionOfASecondAtAnyPrecision) {
  write({
      event(kUser, "get", "pods", "", "2026-01-12T09:41:27.5Z"),
      event(kUser, "get", "pods", "", "2026-01-12T09:41:27.123456789Z"),
  });
  // Only the first lies in [.2 s, .6 s]: ".5" is half a second, not five microseconds.
  const RequestCount c = countRequests(path_, kUser, at(9, 41, 27, 200000), at(9, 41, 27, 600000));
  EXPECT_EQ(c.reads, 1u);
}

TEST_F(AuditTest, AMissingLogCountsNothing) {
  const RequestCount c = countRequests(path_ + ".absent", kUser, at(9, 0, 0, 0), at(10, 0, 0, 0));
  EXPECT_EQ(c.reads + c.writes, 0u);
  EXPECT_TRUE(c.byKind.empty());
}

}  // namespace
}  // namespace ker::bench
