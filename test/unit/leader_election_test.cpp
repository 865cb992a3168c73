#include "common/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <utility>

#include "fake_api_client.h"

namespace ker {
namespace {

using namespace std::chrono_literals;
using testing::FakeApiClient;

const SystemTime kStart = SystemTime(std::chrono::seconds(1'800'000'000));
const SteadyTime kSteadyStart = SteadyTime(std::chrono::hours(100));

// Clocks tests move by hand: time passing moves both, a wall-clock jump (NTP, a skewed node)
// only the wall clock. Thread-safe because the elector may read them from its thread.
class ManualClock {
 public:
  SystemTime wall() const {
    std::lock_guard lock(mu_);
    return kStart + elapsed_ + jump_;
  }
  SteadyTime steady() const {
    std::lock_guard lock(mu_);
    return kSteadyStart + elapsed_;
  }
  void advance(std::chrono::milliseconds d) {
    std::lock_guard lock(mu_);
    elapsed_ += d;
  }
  void jumpWall(std::chrono::milliseconds d) {
    std::lock_guard lock(mu_);
    jump_ += d;
  }

 private:
  mutable std::mutex mu_;
  std::chrono::milliseconds elapsed_{0};
  std::chrono::milliseconds jump_{0};
};

// A fake API server where another writer changes the lease right after each read of it, once
// armed: the elector's update must then fail its resourceVersion precondition.
class RacingApi : public FakeApiClient {
 public:
  nlohmann::json get(const Resource& res, const std::string& ns, const std::string& name) override {
    if (auto fn = std::exchange(whileReading, nullptr)) {
      fn();
    }
    auto obj = FakeApiClient::get(res, ns, name);
    if (race.exchange(false)) {
      auto changed = obj;
      changed["spec"]["leaseTransitions"] = 99;
      FakeApiClient::update(res, ns, changed);
    }
    return obj;
  }
  std::atomic<bool> race{false};
  std::function<void()> whileReading;  // runs once, inside the next get
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  using LeaderElectorPtr = std::unique_ptr<LeaderElector>;

  LeaderElectorPtr elector(const std::string& identity) {
    LeaderElectionConfig c;
    c.ns = "kube-system";
    c.name = "ctl";
    c.identity = identity;
    c.clock = [this] { return clock.wall(); };
    c.monotonic = [this] { return clock.steady(); };
    LeaderCallbacks cb;
    cb.onStartedLeading = [this] { ++started; };
    cb.onStoppedLeading = [this] { ++stopped; };
    cb.onNewLeader = [this](const std::string& id) {
      std::lock_guard lock(mu);
      newLeaders.push_back(id);
    };
    return std::make_unique<LeaderElector>(api, c, cb);
  }

  nlohmann::json lease() { return api.peek(resources::kLeases, "kube-system", "ctl").value(); }

  // The other holder renews: the spec changes, whatever its renewTime says.
  void renewAs(const std::string& holder, SystemTime renewed) {
    auto l = lease();
    l["spec"]["holderIdentity"] = holder;
    l["spec"]["renewTime"] = formatMicroTime(renewed);
    api.update(resources::kLeases, "kube-system", l);
  }

  void seedLease(const std::string& holder, SystemTime renewed, int transitions = 3) {
    api.seed(resources::kLeases, {{"apiVersion", "coordination.k8s.io/v1"},
                                  {"kind", "Lease"},
                                  {"metadata", {{"name", "ctl"}, {"namespace", "kube-system"}}},
                                  {"spec",
                                   {{"holderIdentity", holder},
                                    {"leaseDurationSeconds", 15},
                                    {"acquireTime", formatMicroTime(renewed - 1h)},
                                    {"renewTime", formatMicroTime(renewed)},
                                    {"leaseTransitions", transitions}}}});
  }

  RacingApi api;
  ManualClock clock;
  std::atomic<int> started{0};
  std::atomic<int> stopped{0};
  std::mutex mu;
  std::vector<std::string> newLeaders;
};

TEST_F(LeaderElectionTest, CreatesAnAbsentLeaseAndLeads) {
  auto e = elector("me");
  EXPECT_FALSE(e->isLeader());
  EXPECT_TRUE(e->step());
  EXPECT_TRUE(e->isLeader());
  EXPECT_EQ(started, 1);
  auto spec = lease()["spec"];
  EXPECT_EQ(spec["holderIdentity"], "me");
  EXPECT_EQ(spec["leaseDurationSeconds"], 15);
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_EQ(spec["renewTime"], formatMicroTime(kStart));
  EXPECT_EQ(spec["acquireTime"], formatMicroTime(kStart));
  EXPECT_EQ(e->observedLeader(), "me");
}

TEST_F(LeaderElectionTest, RenewsEveryStepKeepingAcquireTimeAndTransitions) {
  auto e = elector("me");
  e->step();
  clock.advance(2s);
  EXPECT_TRUE(e->step());
  auto spec = lease()["spec"];
  EXPECT_EQ(spec["renewTime"], formatMicroTime(kStart + 2s));
  EXPECT_EQ(spec["acquireTime"], formatMicroTime(kStart));
  EXPECT_EQ(spec["leaseTransitions"], 0);
  EXPECT_EQ(started, 1) << "renewals do not start leading again";
}

TEST_F(LeaderElectionTest, LeavesAValidLeaseOfAnotherHolderAlone) {
  seedLease("other", kStart - 14s);
  const auto before = lease();
  auto e = elector("me");
  EXPECT_TRUE(e->step());
  EXPECT_FALSE(e->isLeader());
  EXPECT_EQ(started, 0);
  EXPECT_EQ(lease(), before);
  EXPECT_EQ(e->observedLeader(), "other");
  std::lock_guard lock(mu);
  EXPECT_EQ(newLeaders, std::vector<std::string>{"other"});
}

TEST_F(LeaderElectionTest, TakesALeaseSeenUnchangedForItsDurationBumpingTransitions) {
  // Its renewTime is an hour old by our clock, but expiry runs from when we first saw it.
  seedLease("other", kStart - 1h);
  auto e = elector("me");
  EXPECT_TRUE(e->step());
  EXPECT_FALSE(e->isLeader()) << "a lease first seen now is valid for its whole duration";
  clock.advance(15s);
  e->step();
  EXPECT_FALSE(e->isLeader()) << "seen for exactly its duration is not yet expired";
  clock.advance(1ms);
  EXPECT_TRUE(e->step());
  EXPECT_TRUE(e->isLeader());
  auto spec = lease()["spec"];
  EXPECT_EQ(spec["holderIdentity"], "me");
  EXPECT_EQ(spec["leaseTransitions"], 4);
  EXPECT_EQ(spec["acquireTime"], formatMicroTime(kStart + 15001ms));
  EXPECT_EQ(spec["renewTime"], formatMicroTime(kStart + 15001ms));
}

TEST_F(LeaderElectionTest, EveryRenewalSeenRestartsTheExpiry) {
  seedLease("other", kStart);
  auto e = elector("me");
  e->step();
  clock.advance(10s);
  renewAs("other", kStart + 10s);
  e->step();
  clock.advance(10s);
  e->step();
  EXPECT_FALSE(e->isLeader()) << "20s since first seen, but only 10s since the renewal";
  clock.advance(6s);
  e->step();
  EXPECT_TRUE(e->isLeader());
}

TEST_F(LeaderElectionTest, ARenewalSeenByASlowReadCountsFromWhenTheReadReturned) {
  seedLease("other", kStart);
  auto e = elector("me");
  e->step();
  // The read takes 14s, and the holder renews just before it returns.
  api.whileReading = [&] {
    clock.advance(14s);
    renewAs("other", kStart + 14s);
  };
  e->step();
  clock.advance(2s);
  e->step();
  EXPECT_FALSE(e->isLeader()) << "renewed 2s ago, though 16s after the read began";
  clock.advance(13s);
  e->step();
  EXPECT_FALSE(e->isLeader());
  clock.advance(1ms);
  e->step();
  EXPECT_TRUE(e->isLeader());
}

TEST_F(LeaderElectionTest, ClockSkewNeitherExpiresALiveLeaseNorKeepsADeadOne) {
  // The holder's clock is an hour behind ours: each renewal looks long expired by wall time.
  seedLease("other", kStart - 1h);
  auto e = elector("me");
  for (int i = 0; i < 10; ++i) {
    e->step();
    EXPECT_FALSE(e->isLeader()) << "round " << i;
    clock.advance(2s);
    renewAs("other", kStart - 1h + (i + 1) * 2s);
  }
  // Now its clock is a day ahead: the lease looks fresh by wall time until tomorrow.
  renewAs("other", kStart + 24h);
  e->step();
  clock.advance(16s);
  e->step();
  EXPECT_TRUE(e->isLeader()) << "a holder that stopped renewing loses the lease on time";
}

TEST_F(LeaderElectionTest, AWallClockJumpDoesNotEndLeadership) {
  auto e = elector("me");
  e->step();
  api.failNext(FakeApiClient::Verb::kUpdate,
               ApiError(ApiErrorKind::kServerError, 500, "InternalError", "etcd down"));
  clock.jumpWall(1h);
  EXPECT_TRUE(e->step());
  EXPECT_TRUE(e->isLeader()) << "one failed renewal a moment after the last is within deadline";
  clock.jumpWall(-2h);
  clock.advance(2s);
  EXPECT_TRUE(e->step());
  EXPECT_TRUE(e->isLeader());
  EXPECT_EQ(lease()["spec"]["renewTime"], formatMicroTime(kStart - 1h + 2s))
      << "the lease still shows the wall time, for people";
}

TEST_F(LeaderElectionTest, TakesAReleasedLeaseAtOnce) {
  seedLease("", kStart);
  auto e = elector("me");
  e->step();
  EXPECT_TRUE(e->isLeader());
  EXPECT_EQ(lease()["spec"]["leaseTransitions"], 4);
}

TEST_F(LeaderElectionTest, ALeaseWithoutADurationIsHeldAsLongAsOurs) {
  api.seed(resources::kLeases, {{"metadata", {{"name", "ctl"}, {"namespace", "kube-system"}}},
                                {"spec", {{"holderIdentity", "x"}, {"renewTime", "yesterday"}}}});
  auto e = elector("me");
  e->step();
  EXPECT_FALSE(e->isLeader());
  clock.advance(15s);
  e->step();
  EXPECT_FALSE(e->isLeader());
  clock.advance(1ms);
  e->step();
  EXPECT_TRUE(e->isLeader());
}

TEST_F(LeaderElectionTest, LosesTheRaceOnConflict) {
  seedLease("other", kStart);
  auto e = elector("me");
  e->step();
  clock.advance(16s);
  api.failNext(FakeApiClient::Verb::kUpdate,
               ApiError(ApiErrorKind::kConflict, 409, "Conflict", "modified"));
  EXPECT_TRUE(e->step());
  EXPECT_FALSE(e->isLeader());
  EXPECT_EQ(lease()["spec"]["holderIdentity"], "other");
}

TEST_F(LeaderElectionTest, AWriteBetweenReadAndUpdateDefeatsTheTakeover) {
  seedLease("other", kStart);
  auto e = elector("me");
  e->step();
  clock.advance(16s);
  api.race = true;
  EXPECT_TRUE(e->step());
  EXPECT_FALSE(e->isLeader());
  EXPECT_EQ(lease()["spec"]["holderIdentity"], "other");
  EXPECT_EQ(lease()["spec"]["leaseTransitions"], 99);
  e->step();
  EXPECT_FALSE(e->isLeader()) << "the write is a sign of life: the expiry starts again";
  clock.advance(16s);
  e->step();
  EXPECT_TRUE(e->isLeader());
  EXPECT_EQ(lease()["spec"]["leaseTransitions"], 100);
}

TEST_F(LeaderElectionTest, TwoCandidatesNeverBothLead) {
  auto a = elector("a");
  auto b = elector("b");
  for (int i = 0; i < 20; ++i) {
    a->step();
    b->step();
    EXPECT_FALSE(a->isLeader() && b->isLeader());
    EXPECT_TRUE(a->isLeader() || b->isLeader());
    clock.advance(2s);
  }
  EXPECT_TRUE(a->isLeader());
}

TEST_F(LeaderElectionTest, StopsLeadingWhenRenewalFailsPastTheDeadline) {
  auto e = elector("me");
  e->step();
  api.failNext(FakeApiClient::Verb::kUpdate,
               ApiError(ApiErrorKind::kServerError, 500, "InternalError", "etcd down"), -1);
  for (int i = 0; i < 4; ++i) {
    clock.advance(2s);
    EXPECT_TRUE(e->step());
    EXPECT_TRUE(e->isLeader()) << "within the renew deadline after " << (i + 1) * 2 << "s";
  }
  clock.advance(2s);
  EXPECT_FALSE(e->isLeader()) << "writes stop as soon as the deadline passes";
  EXPECT_EQ(stopped, 0);
  EXPECT_FALSE(e->step());
  EXPECT_EQ(stopped, 1);
  EXPECT_FALSE(e->isLeader());
}

TEST_F(LeaderElectionTest, ASlowSuccessfulRenewalCountsFromItsStart) {
  auto e = elector("me");
  e->step();
  // The renewal's own timestamp bounds how long others wait, so the deadline runs from the
  // moment the renewal began, not from when it returned.
  api.failNext(FakeApiClient::Verb::kUpdate, ApiError(ApiErrorKind::kTimeout, 0, "", "slow"), 4);
  for (int i = 0; i < 4; ++i) {
    clock.advance(2s);
    e->step();
  }
  clock.advance(1s);
  EXPECT_TRUE(e->step());
  EXPECT_TRUE(e->isLeader());
  clock.advance(10s);
  EXPECT_FALSE(e->isLeader());
}

TEST_F(LeaderElectionTest, AnotherHolderTakingTheLeaseEndsLeadership) {
  auto e = elector("me");
  e->step();
  auto l = lease();
  l["spec"]["holderIdentity"] = "thief";
  l["spec"]["renewTime"] = formatMicroTime(kStart + 5s);
  api.update(resources::kLeases, "kube-system", l);
  clock.advance(5s);
  EXPECT_TRUE(e->step());
  EXPECT_TRUE(e->isLeader()) << "still within the renew deadline";
  clock.advance(6s);
  EXPECT_FALSE(e->step());
  EXPECT_EQ(stopped, 1);
}

TEST_F(LeaderElectionTest, StopReleasesTheLeaseForAnImmediateSuccessor) {
  auto a = elector("a");
  a->step();
  a->stop();
  EXPECT_EQ(stopped, 1);
  EXPECT_FALSE(a->isLeader());
  auto spec = lease()["spec"];
  EXPECT_EQ(spec["holderIdentity"], "");
  EXPECT_EQ(spec["leaseDurationSeconds"], 1);

  auto b = elector("b");
  b->step();
  EXPECT_TRUE(b->isLeader());
  EXPECT_EQ(lease()["spec"]["leaseTransitions"], 1);
  a->stop();
  EXPECT_EQ(stopped, 1) << "stop is idempotent";
}

TEST_F(LeaderElectionTest, StopWithoutLeadingTouchesNothing) {
  seedLease("other", kStart);
  const auto before = lease();
  auto e = elector("me");
  e->step();
  e->stop();
  EXPECT_EQ(stopped, 0);
  EXPECT_EQ(lease(), before);
}

TEST_F(LeaderElectionTest, ReadFailuresAreNotFatal) {
  api.failNext(FakeApiClient::Verb::kGet,
               ApiError(ApiErrorKind::kTransport, 0, "", "connection refused"));
  auto e = elector("me");
  EXPECT_TRUE(e->step());
  EXPECT_FALSE(e->isLeader());
  e->step();
  EXPECT_TRUE(e->isLeader());
}

TEST_F(LeaderElectionTest, TheLoopAcquiresAndStopReleases) {
  LeaderElectionConfig c;
  c.name = "ctl";
  c.identity = "looper";
  c.leaseDuration = 3s;
  c.renewDeadline = 2s;
  c.retryPeriod = 10ms;
  std::atomic<bool> leading{false};
  LeaderElector e(api, c,
                  {.onStartedLeading = [&] { leading = true; },
                   .onStoppedLeading = [&] { leading = false; },
                   .onNewLeader = {}});
  e.start();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!leading && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(leading);
  EXPECT_TRUE(e.isLeader());
  e.stop();
  EXPECT_FALSE(leading);
  EXPECT_EQ(lease()["spec"]["holderIdentity"], "");
}

TEST_F(LeaderElectionTest, TheLoopEndsWhenLeadershipIsLost) {
  LeaderElectionConfig c;
  c.name = "ctl";
  c.identity = "looper";
  c.leaseDuration = 300ms;
  c.renewDeadline = 100ms;
  c.retryPeriod = 10ms;
  std::atomic<int> lost{0};
  LeaderElector e(api, c,
                  {.onStartedLeading = {}, .onStoppedLeading = [&] { ++lost; }, .onNewLeader = {}});
  e.start();
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!e.isLeader() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(e.isLeader());
  api.failNext(FakeApiClient::Verb::kUpdate,
               ApiError(ApiErrorKind::kServerError, 500, "InternalError", "down"), -1);
  while (lost == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(lost, 1);
  EXPECT_FALSE(e.isLeader());
  e.stop();
  EXPECT_EQ(lost, 1) << "no second onStoppedLeading for the same term";
}

TEST(LeaderElectionConfigTest, Validate) {
  LeaderElectionConfig c;
  c.identity = "me";
  EXPECT_NO_THROW(LeaderElector::validate(c));
  auto bad = c;
  bad.identity.clear();
  EXPECT_THROW(LeaderElector::validate(bad), std::invalid_argument);
  bad = c;
  bad.renewDeadline = bad.leaseDuration;
  EXPECT_THROW(LeaderElector::validate(bad), std::invalid_argument);
  bad = c;
  bad.retryPeriod = bad.renewDeadline;
  EXPECT_THROW(LeaderElector::validate(bad), std::invalid_argument);
  bad = c;
  bad.retryPeriod = 0ms;
  EXPECT_THROW(LeaderElector::validate(bad), std::invalid_argument);
}

TEST(IdentityTest, HostnameAndARandomSuffix) {
  const std::string a = defaultIdentity();
  const std::string b = defaultIdentity();
  EXPECT_NE(a, b);
  const size_t sep = a.rfind('_');
  ASSERT_NE(sep, std::string::npos);
  EXPECT_GT(sep, 0u);
  EXPECT_EQ(a.size() - sep - 1, 8u);
}

}  // namespace
}  // namespace ker
