// ker-check-invariants against the API: what it reports, and how --settle tells a state the
// cluster passes through from one that stays broken.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "model/objects.h"
#include "test_env.h"

namespace ker::itest {
namespace {

using nlohmann::json;

class CheckInvariantsTest : public ApiTest {
 protected:
  struct Run {
    int rc = -1;
    std::string out;
    std::chrono::milliseconds took{0};
  };
  Run check(const std::string& settle) const {
    Run r;
    const auto start = std::chrono::steady_clock::now();
    r.rc = runShell(shellQuote(env_->binary("tools/ker-check-invariants")) + " --settle=" + settle +
                        " --kubeconfig " + shellQuote(env_->kubeconfig()),
                    &r.out);
    r.took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    return r;
  }
  // A claim whose status breaks an invariant: Pending, yet listing a device.
  std::string createBrokenClaim(const std::string& ns) {
    json claim = api_->create(resources::kExtendedResourceClaims, ns,
                              claimObject(ns, "broken", "x.io/gpu", 1));
    claim["status"] = {{"phase", "Pending"}, {"extendedResourceNames", {"nowhere"}}};
    api_->updateStatus(resources::kExtendedResourceClaims, ns, claim);
    return "claim " + ns + "/broken is Pending but lists devices";
  }
};

TEST_F(CheckInvariantsTest, AViolationThatStaysIsReportedWithOrWithoutSettling) {
  const std::string ns = createNamespace(*api_, "inv");
  const std::string violation = createBrokenClaim(ns);

  const Run once = check("0");
  EXPECT_EQ(once.rc, 1) << once.out;
  EXPECT_NE(once.out.find("VIOLATION: " + violation), std::string::npos) << once.out;

  const Run settled = check("2s");
  EXPECT_EQ(settled.rc, 1) << settled.out;
  EXPECT_NE(settled.out.find("VIOLATION: " + violation), std::string::npos) << settled.out;
  EXPECT_GE(settled.took, std::chrono::seconds(2)) << "it did not keep checking";
  api_->remove(resources::kExtendedResourceClaims, ns, "broken");
}

TEST_F(CheckInvariantsTest, AViolationGoneWhileItSettlesIsNotReported) {
  const std::string ns = createNamespace(*api_, "inv");
  const std::string violation = createBrokenClaim(ns);

  auto run = std::async(std::launch::async, [&] { return check("30s"); });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  api_->remove(resources::kExtendedResourceClaims, ns, "broken");
  const Run r = run.get();
  EXPECT_EQ(r.out.find(violation), std::string::npos) << r.out;
  EXPECT_GE(r.took, std::chrono::milliseconds(1500)) << "its first check was already clean";
}

}  // namespace
}  // namespace ker::itest
