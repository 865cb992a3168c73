#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>

#include "agent/agent_metrics.h"
#include "agent/runtime_connection.h"
#include "common/metrics.h"
#include "nri/proto/nri.pb.h"
#include "nri/proto/ttrpc.pb.h"
#include "nri_fake_runtime.h"

namespace ker::agent {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using nri::testing::FakeRuntime;

// Subscribes to container creation and adjusts every container it is asked about.
class CountingPlugin : public nri::Plugin {
 public:
  nri::Status configure(const nri::ConfigureRequest&, nri::ConfigureResponse* resp) override {
    resp->set_events(nri::eventBit(nri::CREATE_CONTAINER));
    return nri::Status::ok();
  }
  nri::Status createContainer(const nri::CreateContainerRequest&,
                              nri::CreateContainerResponse* resp) override {
    ++created;
    auto* env = resp->mutable_adjust()->add_env();
    env->set_key("KER_DEVICE_IDS");
    env->set_value("dev-0");
    return nri::Status::ok();
  }
  std::atomic<int> created{0};
};

std::string createContainerPayload(const std::string& container) {
  nri::CreateContainerRequest req;
  req.mutable_pod()->set_uid("uid-1");
  req.mutable_pod()->set_name("p");
  req.mutable_pod()->set_namespace_("default");
  req.mutable_container()->set_name(container);
  return req.SerializeAsString();
}

// The bytes of a request of the runtime on the plugin-service connection.
std::string requestFrames(uint32_t stream, const std::string& method, const std::string& payload) {
  ker::ttrpc::Request req;
  req.set_service("nri.pkg.api.v1alpha1.Plugin");
  req.set_method(method);
  req.set_payload(payload);
  req.set_timeout_nano(2'000'000'000);
  std::string msg;
  EXPECT_TRUE(nri::appendMessage(stream, nri::kMessageTypeRequest, 0, req.SerializeAsString(), &msg)
                  .isOk());
  std::string frames;
  nri::appendMuxFrames(nri::kPluginServiceConn, msg, &frames);
  return frames;
}

// Plays containerd on a unix socket in a directory of its own, with the agent's connection
// running on a thread.
class RuntimeConnectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ker-rc-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options.socketPath = dir_ + "/nri.sock";
    options.pluginName = "ker-agent";
    options.pluginIndex = "10";
    options.registerTimeout = 2s;
    listenFd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(listenFd_, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, options.socketPath.c_str(), sizeof(addr.sun_path) - 1);
    ASSERT_EQ(bind(listenFd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ASSERT_EQ(listen(listenFd_, 4), 0);
  }
  void TearDown() override {
    stop = true;
    joinAgent();
    connection.reset();
    stopListening();
    std::filesystem::remove_all(dir_);
  }

  void startAgent() {
    connection = std::make_unique<RuntimeConnection>(options, &plugin, &metrics);
    agent_ = std::thread([this] {
      connection->run(stop);
      returned = true;
    });
  }
  // Starts the agent and plays containerd's part of its registration on `runtime`.
  void startRegistered() {
    startAgent();
    ASSERT_TRUE(accept(&runtime));
    registration(&runtime);
  }
  // Starts the agent registered on `runtime`, stops it, and plays containerd's part of the
  // leaving registration on `second` (Configure's request timeout as given).
  void stopAndAcceptLeaving(FakeRuntime* second, int64_t requestTimeoutMs = 2000) {
    ASSERT_NO_FATAL_FAILURE(startRegistered());
    stop = true;
    ASSERT_TRUE(accept(second)) << "no leaving registration";
    EXPECT_EQ(registration(second, requestTimeoutMs).name, "ker-agent-leaving");
  }
  void joinAgent() {
    if (agent_.joinable()) {
      agent_.join();
    }
  }
  bool runReturnsWithin(std::chrono::milliseconds timeout) {
    for (auto deadline = Clock::now() + timeout; !returned.load() && Clock::now() < deadline;) {
      std::this_thread::sleep_for(10ms);
    }
    return returned.load();
  }
  void stopListening() {
    if (listenFd_ >= 0) {
      close(listenFd_);
      listenFd_ = -1;
      std::filesystem::remove(options.socketPath);
    }
  }
  // The next connection to the socket, within two seconds.
  bool accept(FakeRuntime* runtime) {
    pollfd p{.fd = listenFd_, .events = POLLIN};
    if (poll(&p, 1, 2000) != 1) {
      return false;
    }
    int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      return false;
    }
    runtime->adopt(fd);
    return true;
  }
  // containerd's part of a registration: answers RegisterPlugin and sends Configure. The name
  // and index registered, and the events the plugin subscribed to.
  struct Registration {
    std::string name, index;
    int32_t events = -1;
  };
  Registration registration(FakeRuntime* runtime, int64_t requestTimeoutMs = 2000) {
    Registration r;
    auto call = runtime->receive(nri::kRuntimeServiceConn);
    EXPECT_TRUE(call);
    if (!call) {
      return r;
    }
    ker::ttrpc::Request req;
    nri::RegisterPluginRequest reg;
    EXPECT_TRUE(req.ParseFromString(call->data) && reg.ParseFromString(req.payload()));
    EXPECT_EQ(req.method(), "RegisterPlugin");
    r.name = reg.plugin_name();
    r.index = reg.plugin_idx();
    runtime->sendResponse(call->header.streamId, "");
    nri::ConfigureRequest cfg;
    cfg.set_runtime_name("containerd");
    cfg.set_request_timeout(requestTimeoutMs);
    runtime->sendRequest(1, "Configure", cfg.SerializeAsString());
    auto resp = runtime->receiveResponse();
    nri::ConfigureResponse configured;
    EXPECT_TRUE(resp && configured.ParseFromString(resp->payload()));
    r.events = configured.events();
    return r;
  }

  RuntimeConnection::Options options;
  FakeRuntime runtime;  // containerd's end of the agent's connection
  CountingPlugin plugin;
  metrics::Registry registry;
  AgentMetrics metrics{registry};
  std::unique_ptr<RuntimeConnection> connection;
  std::atomic<bool> stop{false};
  std::atomic<bool> returned{false};

 private:
  std::string dir_;
  int listenFd_ = -1;
  std::thread agent_;
};

// The order that leaves no creation through: the leaving plugin registers while the agent's
// connection still answers, the connection closes once the runtime is quiet, and the last part
// of the leaving plugin's Synchronize is answered only after the runtime closed its end.
TEST_F(RuntimeConnectionTest,
       StoppingRegistersTheLeavingPluginFirstAndAnswersItsSyncAfterTheClose) {
  options.drainQuiet = 800ms;
  options.drainLimit = 5s;
  options.hangUpTimeout = 3s;
  options.leaveSyncWait = 3s;
  startAgent();
  ASSERT_TRUE(accept(&runtime));
  Registration agent = registration(&runtime);
  EXPECT_EQ(agent.name, "ker-agent");
  EXPECT_EQ(agent.events, nri::eventBit(nri::CREATE_CONTAINER));

  runtime.sendRequest(3, "CreateContainer", createContainerPayload("before"));
  auto answered = runtime.receiveResponse();
  ASSERT_TRUE(answered);
  EXPECT_FALSE(answered->has_status());
  EXPECT_EQ(plugin.created.load(), 1);

  stop = true;
  FakeRuntime second;
  ASSERT_TRUE(accept(&second)) << "no leaving registration while the connection is up";
  Registration leaving = registration(&second, 10000);  // no answer at the runtime's timeout
  EXPECT_EQ(leaving.name, "ker-agent-leaving");
  EXPECT_EQ(leaving.index, "10");
  EXPECT_EQ(leaving.events, nri::eventBit(nri::REMOVE_POD_SANDBOX));

  auto lastAt = Clock::now();
  for (uint32_t stream = 5; stream <= 11; stream += 2) {
    runtime.sendRequest(stream, "CreateContainer", createContainerPayload("while-stopping"));
    lastAt = Clock::now();
    auto answer = runtime.receiveResponse();
    ASSERT_TRUE(answer) << "closed while the runtime was still talking";
    EXPECT_FALSE(answer->has_status());
    std::this_thread::sleep_for(300ms);
  }
  EXPECT_EQ(plugin.created.load(), 5);

  ASSERT_TRUE(runtime.closedByPlugin(4s));
  EXPECT_GE(Clock::now() - lastAt, 600ms) << "closed before the runtime was quiet";

  // Synchronize in two parts, sent once the agent's connection was closed but before this end
  // closed (a runtime taking its time to notice): only the last part is held.
  nri::SynchronizeRequest part;
  part.set_more(true);
  second.sendRequest(3, "Synchronize", part.SerializeAsString());
  auto first = second.receiveResponse();
  nri::SynchronizeResponse echoed;
  ASSERT_TRUE(first && echoed.ParseFromString(first->payload()));
  EXPECT_TRUE(echoed.more());
  second.sendRequest(5, "Synchronize", nri::SynchronizeRequest().SerializeAsString());
  EXPECT_FALSE(second.receiveResponse()) << "Synchronize answered before the runtime closed "
                                            "the agent's connection";
  EXPECT_FALSE(returned.load());
  runtime.closeNow();  // as containerd does on reading the end
  auto last = second.receiveResponse();
  ASSERT_TRUE(last);
  EXPECT_FALSE(last->has_status());
  EXPECT_TRUE(second.closedByPlugin(2s));
  EXPECT_TRUE(runReturnsWithin(2s));
}

// A connection that breaks while the agent stops (bytes that are no request) is closed before
// the leaving plugin's Synchronize is answered, as on the usual path: the runtime would keep a
// plugin whose socket is still open beside the new one.
TEST_F(RuntimeConnectionTest, AConnectionThatBreaksWhileStoppingIsClosedBeforeTheLeavingSync) {
  options.drainQuiet = 5s;
  options.drainLimit = 10s;
  options.leaveSyncWait = 3s;
  FakeRuntime second;
  ASSERT_NO_FATAL_FAILURE(stopAndAcceptLeaving(&second));
  runtime.sendRaw(std::string("\0\0\0\0garbage!", 12));
  std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(runtime.fullyClosedByPlugin()) << "the broken connection is still open";
  second.sendRequest(3, "Synchronize", nri::SynchronizeRequest().SerializeAsString());
  auto answer = second.receiveResponse();
  ASSERT_TRUE(answer);
  EXPECT_FALSE(answer->has_status());
  EXPECT_TRUE(runReturnsWithin(2s));
}

// A Synchronize under way means containerd holds its plugin-sync lock: nothing more can come
// to the agent's connection, so the drain ends at once instead of waiting to be quiet.
TEST_F(RuntimeConnectionTest, ASynchronizeUnderWayEndsTheDrainAtOnce) {
  options.drainQuiet = 5s;
  options.drainLimit = 10s;
  FakeRuntime second;
  ASSERT_NO_FATAL_FAILURE(stopAndAcceptLeaving(&second));
  EXPECT_FALSE(runtime.closedByPlugin(500ms)) << "closed with no Synchronize and not yet quiet";
  second.sendRequest(3, "Synchronize", nri::SynchronizeRequest().SerializeAsString());
  const auto sentAt = Clock::now();
  ASSERT_TRUE(runtime.closedByPlugin(2s));
  EXPECT_LT(Clock::now() - sentAt, 1s);
  runtime.closeNow();
  auto answer = second.receiveResponse();
  ASSERT_TRUE(answer);
  EXPECT_FALSE(answer->has_status());
  EXPECT_TRUE(runReturnsWithin(2s));
}

// containerd withholds Synchronize while it stops the agent's own container: the agent's stop
// does not wait for it long (its exit ends that stop), and a Synchronize that comes later is
// answered at once for as long as the agent lives.
TEST_F(RuntimeConnectionTest, AWithheldSynchronizeEndsTheStopAfterAShortWaitAndIsAnsweredLater) {
  options.drainQuiet = 100ms;
  options.leaveSyncWait = 500ms;
  FakeRuntime second;
  ASSERT_NO_FATAL_FAILURE(stopAndAcceptLeaving(&second));
  ASSERT_TRUE(runtime.closedByPlugin(2s));
  runtime.closeNow();
  const auto closedAt = Clock::now();
  EXPECT_TRUE(runReturnsWithin(2s));
  EXPECT_GE(Clock::now() - closedAt, 500ms);

  second.sendRequest(3, "Synchronize", nri::SynchronizeRequest().SerializeAsString());
  const auto sentAt = Clock::now();
  auto late = second.receiveResponse();
  ASSERT_TRUE(late) << "a late Synchronize went unanswered";
  EXPECT_FALSE(late->has_status());
  EXPECT_LT(Clock::now() - sentAt, 500ms);
  EXPECT_TRUE(second.closedByPlugin(2s));
}

// The agent's exit ends the leaving registration even when no Synchronize ever came.
TEST_F(RuntimeConnectionTest, TheLeavingRegistrationEndsWithTheAgent) {
  options.drainQuiet = 100ms;
  options.leaveSyncWait = 200ms;
  FakeRuntime second;
  ASSERT_NO_FATAL_FAILURE(stopAndAcceptLeaving(&second));
  ASSERT_TRUE(runtime.closedByPlugin(2s));
  runtime.closeNow();
  EXPECT_TRUE(runReturnsWithin(2s));
  EXPECT_FALSE(second.closedByPlugin(300ms));
  joinAgent();
  connection.reset();
  EXPECT_TRUE(second.closedByPlugin(1s));
}

// A runtime that does not close its end of the agent's connection: the wait for it is
// bounded, and the held Synchronize is answered after it (Session::hangUp has closed the
// socket by then).
TEST_F(RuntimeConnectionTest, AHangUpTheRuntimeDoesNotAnswerIsBoundedAndTheSyncStillAnswered) {
  options.drainQuiet = 100ms;
  options.hangUpTimeout = 300ms;
  FakeRuntime second;
  ASSERT_NO_FATAL_FAILURE(stopAndAcceptLeaving(&second, 10000));
  second.sendRequest(3, "Synchronize", nri::SynchronizeRequest().SerializeAsString());
  ASSERT_TRUE(runtime.closedByPlugin(2s));  // the agent's writing side; this end stays open
  const auto hungUpAt = Clock::now();
  auto answer = second.receiveResponse();
  ASSERT_TRUE(answer);
  EXPECT_FALSE(answer->has_status());
  EXPECT_GE(Clock::now() - hungUpAt, 300ms);
  EXPECT_TRUE(runReturnsWithin(2s));
}

// The runtime's own timeout for Synchronize (Configure's request_timeout, 2 s here) bounds
// the hold: an answer after it would only get the leaving plugin dropped. Here the runtime
// never closes its end of the agent's connection, and the hang-up would wait 3 s.
TEST_F(RuntimeConnectionTest, AHeldSynchronizeIsAnsweredBeforeTheRuntimesTimeout) {
  options.hangUpTimeout = 3s;
  FakeRuntime second;
  ASSERT_NO_FATAL_FAILURE(stopAndAcceptLeaving(&second));
  second.sendRequest(3, "Synchronize", nri::SynchronizeRequest().SerializeAsString());
  const auto sentAt = Clock::now();
  ASSERT_TRUE(runtime.closedByPlugin(1s));
  auto synced = second.receive(nri::kPluginServiceConn, 3s);
  ASSERT_TRUE(synced);
  EXPECT_GE(Clock::now() - sentAt, 1300ms);
  EXPECT_LT(Clock::now() - sentAt, 2s);
}

TEST_F(RuntimeConnectionTest, AHalfReadRequestKeepsTheConnectionOpenUntilItIsWhole) {
  options.drainQuiet = 300ms;
  options.drainLimit = 5s;
  ASSERT_NO_FATAL_FAILURE(startRegistered());
  stopListening();  // nothing to leave to: the stop must end all the same

  const std::string frames = requestFrames(3, "CreateContainer", createContainerPayload("split"));
  runtime.sendRaw(frames.substr(0, frames.size() / 2));
  std::this_thread::sleep_for(300ms);  // read by the serving loop
  stop = true;
  EXPECT_FALSE(runtime.closedByPlugin(1500ms)) << "closed with a request half read";
  runtime.sendRaw(frames.substr(frames.size() / 2));
  auto answer = runtime.receiveResponse();
  ASSERT_TRUE(answer);
  EXPECT_FALSE(answer->has_status());
  EXPECT_EQ(plugin.created.load(), 1);
  EXPECT_TRUE(runtime.closedByPlugin(3s));
  EXPECT_TRUE(runReturnsWithin(2s));
}

TEST_F(RuntimeConnectionTest, ARuntimeThatNeverFallsQuietIsClosedAtTheDrainLimit) {
  options.drainQuiet = 500ms;
  options.drainLimit = 1s;
  ASSERT_NO_FATAL_FAILURE(startRegistered());
  stopListening();
  stop = true;
  const auto stoppedAt = Clock::now();
  bool closed = false;
  for (uint32_t stream = 3; !closed && Clock::now() - stoppedAt < 4s; stream += 2) {
    runtime.sendRequest(stream, "CreateContainer", createContainerPayload("busy"));
    closed = runtime.closedByPlugin(200ms);
  }
  EXPECT_TRUE(closed);
  EXPECT_LT(Clock::now() - stoppedAt, 2500ms);
  EXPECT_GT(plugin.created.load(), 3);
  EXPECT_TRUE(runReturnsWithin(2s));
}

}  // namespace
}  // namespace ker::agent
