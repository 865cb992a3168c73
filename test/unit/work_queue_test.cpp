#include "common/work_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>
#include <vector>

namespace ker {
namespace {

using namespace std::chrono_literals;

constexpr auto kBound = 5s;  // generous upper bound for anything that should happen "soon"

// Hands out fixed delays and counts calls, so tests decide what the rate limiter says.
class ScriptedLimiter : public RateLimiter {
 public:
  explicit ScriptedLimiter(Duration delay) : delay_(delay) {}
  Duration when(const std::string& key) override {
    std::lock_guard lock(mu_);
    ++counts_[key];
    return delay_;
  }
  void forget(const std::string& key) override {
    std::lock_guard lock(mu_);
    counts_.erase(key);
  }
  int numRequeues(const std::string& key) override {
    std::lock_guard lock(mu_);
    return counts_.count(key) ? counts_[key] : 0;
  }

 private:
  const Duration delay_;
  std::mutex mu_;
  std::map<std::string, int> counts_;
};

std::optional<std::string> getWithin(WorkQueue& q, std::chrono::milliseconds bound = kBound) {
  auto f = std::async(std::launch::async, [&q] { return q.get(); });
  if (f.wait_for(bound) != std::future_status::ready) {
    ADD_FAILURE() << "get() did not return within the bound";
    q.shutDown();  // unblocks the getter so the test can end
  }
  return f.get();
}

TEST(WorkQueue, DeduplicatesWaitingKeysInFifoOrder) {
  WorkQueue q;
  q.add("a");
  q.add("b");
  q.add("a");
  q.add("c");
  q.add("b");
  EXPECT_EQ(q.len(), 3u);
  EXPECT_EQ(getWithin(q), "a");
  EXPECT_EQ(getWithin(q), "b");
  EXPECT_EQ(getWithin(q), "c");
  EXPECT_EQ(q.len(), 0u);
}

TEST(WorkQueue, KeyAddedWhileProcessingIsRequeuedOnlyAfterDone) {
  WorkQueue q;
  q.add("a");
  ASSERT_EQ(getWithin(q), "a");
  q.add("a");
  q.add("a");
  EXPECT_EQ(q.len(), 0u);  // held back: "a" is being processed
  q.add("b");
  EXPECT_EQ(q.len(), 1u);
  q.done("a");
  EXPECT_EQ(q.len(), 2u);
  // "a" goes behind what was queued meanwhile, and only once.
  EXPECT_EQ(getWithin(q), "b");
  EXPECT_EQ(getWithin(q), "a");
  EXPECT_EQ(q.len(), 0u);
  q.done("a");
  q.done("b");
  EXPECT_EQ(q.len(), 0u);
}

TEST(WorkQueue, DoneWithoutReAddDoesNotRequeue) {
  WorkQueue q;
  q.add("a");
  ASSERT_EQ(getWithin(q), "a");
  q.done("a");
  EXPECT_EQ(q.len(), 0u);
  q.add("a");  // processing finished, so this is an ordinary add
  EXPECT_EQ(q.len(), 1u);
}

TEST(WorkQueue, GetBlocksUntilAdd) {
  WorkQueue q;
  auto f = std::async(std::launch::async, [&q] { return q.get(); });
  EXPECT_EQ(f.wait_for(50ms), std::future_status::timeout);
  q.add("x");
  ASSERT_EQ(f.wait_for(kBound), std::future_status::ready);
  EXPECT_EQ(f.get(), "x");
}

TEST(WorkQueue, ShutDownUnblocksEveryGetter) {
  WorkQueue q;
  std::vector<std::future<std::optional<std::string>>> getters;
  for (int i = 0; i < 4; ++i) {
    getters.push_back(std::async(std::launch::async, [&q] { return q.get(); }));
  }
  EXPECT_EQ(getters[0].wait_for(30ms), std::future_status::timeout);
  q.shutDown();
  for (auto& g : getters) {
    ASSERT_EQ(g.wait_for(kBound), std::future_status::ready);
    EXPECT_EQ(g.get(), std::nullopt);
  }
  EXPECT_TRUE(q.shuttingDown());
}

TEST(WorkQueue, AfterShutDownAddsAreIgnoredAndGetReturnsAtOnce) {
  WorkQueue q;
  q.add("queued");
  q.shutDown();
  q.add("late");
  q.addAfter("later", 1ms);
  EXPECT_EQ(q.len(), 1u);
  EXPECT_EQ(getWithin(q), std::nullopt);
}

TEST(WorkQueue, AddAfterFiresOnceTheDelayHasPassed) {
  WorkQueue q;
  const auto start = std::chrono::steady_clock::now();
  q.addAfter("d", 50ms);
  EXPECT_EQ(q.len(), 0u);
  EXPECT_EQ(getWithin(q), "d");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
}

TEST(WorkQueue, AddAfterWithoutDelayIsAnAdd) {
  WorkQueue q;
  q.addAfter("now", 0ms);
  q.addAfter("past", -5ms);
  EXPECT_EQ(q.len(), 2u);
}

TEST(WorkQueue, DelayedKeysFireInDeadlineOrder) {
  WorkQueue q;
  q.addAfter("late", 120ms);
  q.addAfter("early", 30ms);
  q.addAfter("middle", 70ms);
  EXPECT_EQ(getWithin(q), "early");
  EXPECT_EQ(getWithin(q), "middle");
  EXPECT_EQ(getWithin(q), "late");
}

TEST(WorkQueue, EarlierDeadlineWinsForTheSameKey) {
  WorkQueue q;
  q.addAfter("k", 1h);
  q.addAfter("k", 20ms);
  EXPECT_EQ(getWithin(q), "k");
  q.done("k");

  q.addAfter("j", 20ms);
  q.addAfter("j", 1h);  // later: ignored, "j" stays due in 20ms and fires once
  EXPECT_EQ(getWithin(q), "j");
  q.done("j");
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(q.len(), 0u);
}

TEST(WorkQueue, DelayedKeyForAKeyInProcessingWaitsForDone) {
  WorkQueue q;
  q.add("a");
  ASSERT_EQ(getWithin(q), "a");
  q.addAfter("a", 10ms);
  std::this_thread::sleep_for(60ms);
  EXPECT_EQ(q.len(), 0u);
  q.done("a");
  EXPECT_EQ(q.len(), 1u);
  EXPECT_EQ(getWithin(q), "a");
}

TEST(WorkQueue, AddRateLimitedUsesTheLimiter) {
  auto limiter = std::make_unique<ScriptedLimiter>(30ms);
  WorkQueue q(std::move(limiter));
  const auto start = std::chrono::steady_clock::now();
  q.addRateLimited("r");
  EXPECT_EQ(q.numRequeues("r"), 1);
  EXPECT_EQ(q.len(), 0u);
  EXPECT_EQ(getWithin(q), "r");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  q.done("r");
  q.addRateLimited("r");
  EXPECT_EQ(q.numRequeues("r"), 2);
  q.forget("r");
  EXPECT_EQ(q.numRequeues("r"), 0);
  EXPECT_EQ(getWithin(q), "r");  // forget does not cancel the pending retry
}

TEST(WorkQueue, DefaultLimiterBacksOffPerKey) {
  WorkQueue q;
  q.addRateLimited("x");
  q.addRateLimited("x");
  EXPECT_EQ(q.numRequeues("x"), 2);
  EXPECT_EQ(getWithin(q), "x");
  q.forget("x");
  EXPECT_EQ(q.numRequeues("x"), 0);
}

TEST(WorkQueue, DestructionWithPendingDelaysDoesNotHang) {
  auto f = std::async(std::launch::async, [] {
    WorkQueue q;
    q.addAfter("never", 1h);
    q.add("queued");
  });
  EXPECT_EQ(f.wait_for(kBound), std::future_status::ready);
}

// Several workers and producers hammer a few keys. No key may ever be processed by two workers
// at once, and every add must be followed by a processing of that key that saw it.
TEST(WorkQueue, ConcurrentWorkersNeverShareAKeyAndLoseNoAdds) {
  constexpr int kKeys = 5;
  constexpr int kWorkers = 4;
  constexpr int kProducers = 3;
  constexpr int kAddsPerProducer = 400;

  WorkQueue q;
  std::mutex mu;
  std::set<std::string> inFlight;
  std::atomic<int> overlaps{0};
  std::atomic<int> processed{0};
  std::atomic<int> reAdds{500};
  std::array<std::atomic<int>, kKeys> version{};  // bumped before every add
  std::array<std::atomic<int>, kKeys> seen{};     // version a worker observed after get()

  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.get()) {
        {
          std::lock_guard lock(mu);
          if (!inFlight.insert(*key).second) {
            ++overlaps;
          }
        }
        const int k = std::stoi(key->substr(1));
        seen[k] = version[k].load();
        // Re-adding the key being processed is exactly when a second worker must not get it.
        if (reAdds.fetch_sub(1) > 0) {
          q.add(*key);
        }
        std::this_thread::sleep_for(200us);
        {
          std::lock_guard lock(mu);
          inFlight.erase(*key);
        }
        ++processed;
        q.done(*key);
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kAddsPerProducer; ++i) {
        const int k = (i * 7 + p) % kKeys;
        ++version[k];
        if (i % 10 == 0) {
          q.addAfter("k" + std::to_string(k), 1ms);
        } else {
          q.add("k" + std::to_string(k));
        }
      }
    });
  }
  for (auto& t : producers) {
    t.join();
  }
  const auto deadline = std::chrono::steady_clock::now() + kBound;
  auto caughtUp = [&] {
    for (int k = 0; k < kKeys; ++k) {
      if (seen[k].load() != version[k].load()) {
        return false;
      }
    }
    return true;
  };
  while (!caughtUp() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(1ms);
  }
  q.shutDown();
  for (auto& t : workers) {
    t.join();
  }
  EXPECT_EQ(overlaps.load(), 0);
  for (int k = 0; k < kKeys; ++k) {
    EXPECT_EQ(seen[k].load(), version[k].load()) << "key k" << k << " lost an add";
  }
  // De-duplication folds many adds into few processings.
  EXPECT_GT(processed.load(), 0);
  EXPECT_LE(processed.load(), kProducers * kAddsPerProducer + 500);
}

}  // namespace
}  // namespace ker
