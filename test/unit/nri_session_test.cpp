#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "nri/plugin_service.h"
#include "nri/proto/nri.pb.h"
#include "nri/session.h"
#include "nri_fake_runtime.h"

namespace ker::nri {
namespace {

using namespace std::chrono_literals;
using testing::FakeRuntime;

// Subscribes to container creation; refuses containers named "refused".
class TestPlugin : public Plugin {
 public:
  Status configure(const ConfigureRequest& req, ConfigureResponse* resp) override {
    configured.push_back(req.runtime_name() + "/" + req.runtime_version());
    resp->set_events(eventBit(CREATE_CONTAINER) | eventBit(REMOVE_CONTAINER));
    return Status::ok();
  }
  Status createContainer(const CreateContainerRequest& req,
                         CreateContainerResponse* resp) override {
    if (req.container().name() == "refused") {
      return Status::rpcError(RpcCode::kFailedPrecondition,
                              "claim c is not bound to pod " + req.pod().uid());
    }
    auto* env = resp->mutable_adjust()->add_env();
    env->set_key("KER_DEVICE_IDS");
    env->set_value("dev-0");
    auto* dev = resp->mutable_adjust()->mutable_linux()->add_devices();
    dev->set_path("/dev/null");
    dev->set_type("c");
    dev->set_major(1);
    dev->set_minor(3);
    if (req.container().name() == "huge") {
      resp->mutable_adjust()->mutable_annotations()->insert({"big", std::string(10000, 'a')});
    }
    return Status::ok();
  }
  Status lifecycleEvent(Event event, const PodSandbox& pod, const Container* c) override {
    events.push_back(std::to_string(event) + ":" + pod.uid() + ":" + (c ? c->id() : "-"));
    return Status::ok();
  }
  void shutdown() override { shutdowns++; }

  std::vector<std::string> configured;
  std::vector<std::string> events;
  int shutdowns = 0;
};

class NriSession : public ::testing::Test {
 protected:
  void SetUp() override { session = std::make_unique<Session>(runtime.connect(), &dispatcher); }

  std::string configureRequest() {
    ConfigureRequest req;
    req.set_runtime_name("containerd");
    req.set_runtime_version("v2.4.2");
    req.set_request_timeout(2000);
    return req.SerializeAsString();
  }

  FakeRuntime runtime;
  TestPlugin plugin;
  PluginDispatcher dispatcher{&plugin};
  std::unique_ptr<Session> session;
};

TEST_F(NriSession, RegistersWhileServingConfigureThatArrivesFirst) {
  // containerd may send Configure before its answer to RegisterPlugin reaches the plugin.
  runtime.sendRequest(1, "Configure", configureRequest());
  runtime.sendResponse(1, "");
  ASSERT_TRUE(registerPlugin(session.get(), "ker-agent", "10", 1s).isOk());

  auto call = runtime.receive(kRuntimeServiceConn);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->header.streamId, 1u);
  EXPECT_EQ(call->header.type, kMessageTypeRequest);
  EXPECT_EQ(call->header.flags, 0);
  ker::ttrpc::Request req;
  ASSERT_TRUE(req.ParseFromString(call->data));
  EXPECT_EQ(req.service(), "nri.pkg.api.v1alpha1.Runtime");
  EXPECT_EQ(req.method(), "RegisterPlugin");
  EXPECT_GT(req.timeout_nano(), 0);
  RegisterPluginRequest reg;
  ASSERT_TRUE(reg.ParseFromString(req.payload()));
  EXPECT_EQ(reg.plugin_name(), "ker-agent");
  EXPECT_EQ(reg.plugin_idx(), "10");

  EXPECT_EQ(plugin.configured, std::vector<std::string>{"containerd/v2.4.2"});
  uint32_t stream = 0;
  auto resp = runtime.receiveResponse(&stream);
  ASSERT_TRUE(resp);
  EXPECT_EQ(stream, 1u);
  EXPECT_FALSE(resp->has_status());
  ConfigureResponse cfg;
  ASSERT_TRUE(cfg.ParseFromString(resp->payload()));
  EXPECT_EQ(cfg.events(), (1 << 3) | (1 << 10));
}

TEST_F(NriSession, CallsUseOddIncreasingStreamIds) {
  std::string out;
  runtime.sendResponse(1, "");
  ASSERT_TRUE(session->call(kRuntimeService, "UpdateContainers", "", &out, 1s).isOk());
  runtime.sendResponse(3, "");
  ASSERT_TRUE(session->call(kRuntimeService, "UpdateContainers", "", &out, 1s).isOk());
  EXPECT_EQ(runtime.receive(kRuntimeServiceConn)->header.streamId, 1u);
  EXPECT_EQ(runtime.receive(kRuntimeServiceConn)->header.streamId, 3u);
}

TEST_F(NriSession, RuntimeRefusalIsAnRpcErrorWithItsCodeAndMessage) {
  runtime.sendResponse(1, "", 2, "invalid plugin name");
  Status s = registerPlugin(session.get(), "ker-agent", "10", 1s);
  EXPECT_EQ(s.code(), Status::Code::kRpcError);
  EXPECT_EQ(s.rpcCode(), RpcCode::kUnknown);
  EXPECT_EQ(s.message(), "invalid plugin name");
  EXPECT_TRUE(session->broken().isOk());  // the connection itself is fine
}

TEST_F(NriSession, InvalidNameOrIndexIsRefusedBeforeSending) {
  EXPECT_EQ(registerPlugin(session.get(), "bad/name", "10", 1s).code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(registerPlugin(session.get(), "ok", "1", 1s).code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(runtime.receive(kRuntimeServiceConn));
}

TEST_F(NriSession, SilentRuntimeTimesOutAndALateAnswerIsDropped) {
  auto start = std::chrono::steady_clock::now();
  Status s = registerPlugin(session.get(), "ker-agent", "10", 150ms);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(s.code(), Status::Code::kTimedOut);
  EXPECT_GE(took, 150ms);
  EXPECT_LT(took, 2s);
  runtime.sendResponse(1, "late");
  runtime.sendResponse(3, "");
  std::string out = "untouched";
  EXPECT_TRUE(session->call(kRuntimeService, "UpdateContainers", "", &out, 1s).isOk());
  EXPECT_EQ(out, "");
}

TEST_F(NriSession, RuntimeClosingMidFrameEndsTheCallWithoutHanging) {
  std::string msg;
  ASSERT_TRUE(appendMessage(1, kMessageTypeResponse, 0, "0123456789", &msg).isOk());
  std::string frames;
  appendMuxFrames(kRuntimeServiceConn, msg, &frames);
  runtime.sendRaw(frames.substr(0, frames.size() - 4));
  runtime.closeForWriting();
  std::string out;
  Status s = session->call(kRuntimeService, "RegisterPlugin", "", &out, 5s);
  EXPECT_EQ(s.code(), Status::Code::kClosed);
  EXPECT_NE(s.message().find("mid-frame"), std::string::npos) << s.message();
  EXPECT_EQ(session->serve(10ms).code(), Status::Code::kClosed);
}

TEST_F(NriSession, CallToAClosedRuntimeFailsAtOnce) {
  runtime.closeNow();
  std::string out;
  EXPECT_EQ(session->call(kRuntimeService, "RegisterPlugin", "", &out, 5s).code(),
            Status::Code::kClosed);
}

TEST_F(NriSession, CleanCloseIsClosed) {
  runtime.closeNow();
  Status s = session->serve(1s);
  EXPECT_EQ(s.code(), Status::Code::kClosed);
  EXPECT_EQ(s.message().find("mid-frame"), std::string::npos);
}

// The runtime reads the end of the connection, may still send (dropped), and closes its end:
// only then does hangUp return ok, and the session is closed afterwards.
TEST_F(NriSession, HangUpWaitsForTheRuntimeToCloseItsEnd) {
  std::thread runtimeSide([&] {
    EXPECT_TRUE(runtime.closedByPlugin(2s)) << "the runtime never read the end of the connection";
    runtime.sendRequest(1, "CreateContainer", CreateContainerRequest().SerializeAsString());
    std::this_thread::sleep_for(200ms);
    runtime.closeNow();
  });
  const auto started = std::chrono::steady_clock::now();
  Status s = session->hangUp(3s);
  runtimeSide.join();
  EXPECT_TRUE(s.isOk()) << s.toString();
  EXPECT_GE(std::chrono::steady_clock::now() - started, 200ms);
  EXPECT_EQ(session->serve(10ms).code(), Status::Code::kClosed);
}

// The socket is closed when hangUp returns, even when the runtime kept its end open: a caller
// may rely on that before it tells the runtime anything else.
TEST_F(NriSession, HangUpToARuntimeThatKeepsItsEndOpenTimesOutAndClosesTheSocket) {
  EXPECT_EQ(session->hangUp(200ms).code(), Status::Code::kTimedOut);
  EXPECT_TRUE(runtime.fullyClosedByPlugin());
  EXPECT_EQ(session->serve(10ms).code(), Status::Code::kClosed);
}

// A runtime that keeps writing without closing its end does not hold the hang-up past its time.
TEST_F(NriSession, HangUpToARuntimeThatKeepsWritingEndsAtItsTimeout) {
  std::atomic<bool> done{false};
  std::thread runtimeSide([&] {
    for (uint32_t stream = 1; !done.load() && stream < 100000; stream += 2) {
      try {
        runtime.sendRequest(stream, "CreateContainer",
                            CreateContainerRequest().SerializeAsString());
      } catch (const std::exception&) {
        return;  // the plugin closed the socket
      }
    }
  });
  const auto started = std::chrono::steady_clock::now();
  const Status s = session->hangUp(300ms);
  const auto took = std::chrono::steady_clock::now() - started;
  done = true;
  runtimeSide.join();
  EXPECT_EQ(s.code(), Status::Code::kTimedOut) << s.toString();
  EXPECT_LT(took, 2s);
}

TEST_F(NriSession, HangUpAfterTheRuntimeClosedIsOk) {
  runtime.closeNow();
  EXPECT_EQ(session->serve(1s).code(), Status::Code::kClosed);
  EXPECT_TRUE(session->hangUp(10ms).isOk());
}

TEST_F(NriSession, GarbageIsCorruptionAndFinal) {
  runtime.sendRaw(std::string("\0\0\0\0garbage!", 12));
  EXPECT_EQ(session->serve(1s).code(), Status::Code::kCorruption);
  EXPECT_EQ(session->serve(1s).code(), Status::Code::kCorruption);
}

TEST_F(NriSession, HugeMuxLengthIsCorruptionNotAnAllocation) {
  runtime.sendRaw(std::string("\0\0\0\1\x7f\xff\xff\xff", 8));
  EXPECT_EQ(session->serve(1s).code(), Status::Code::kCorruption);
}

TEST_F(NriSession, ServeWithoutTrafficReturnsOkAfterTheTimeout) {
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(session->serve(50ms).isOk());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 50ms);
}

TEST_F(NriSession, CreateContainerAdjustsOrRefusesWithAClearError) {
  CreateContainerRequest create;
  create.mutable_pod()->set_uid("pod-uid-1");
  create.mutable_container()->set_name("ok");
  runtime.sendRequest(1, "CreateContainer", create.SerializeAsString());
  create.mutable_container()->set_name("refused");
  runtime.sendRequest(3, "CreateContainer", create.SerializeAsString());
  ASSERT_TRUE(session->serve(1s).isOk());

  auto ok = runtime.receiveResponse();
  ASSERT_TRUE(ok);
  EXPECT_FALSE(ok->has_status());
  CreateContainerResponse adjusted;
  ASSERT_TRUE(adjusted.ParseFromString(ok->payload()));
  ASSERT_EQ(adjusted.adjust().env_size(), 1);
  EXPECT_EQ(adjusted.adjust().env(0).key(), "KER_DEVICE_IDS");
  EXPECT_EQ(adjusted.adjust().linux().devices(0).path(), "/dev/null");

  auto refused = runtime.receiveResponse();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status().code(), 9);  // FAILED_PRECONDITION
  EXPECT_EQ(refused->status().message(), "claim c is not bound to pod pod-uid-1");
  EXPECT_TRUE(refused->payload().empty());
}

TEST_F(NriSession, LargeResponsesGoOutInFramesTheGoReaderAccepts) {
  CreateContainerRequest create;
  create.mutable_container()->set_name("huge");
  runtime.sendRequest(1, "CreateContainer", create.SerializeAsString());
  ASSERT_TRUE(session->serve(1s).isOk());
  auto resp = runtime.receiveResponse();
  ASSERT_TRUE(resp);
  CreateContainerResponse adjusted;
  ASSERT_TRUE(adjusted.ParseFromString(resp->payload()));
  EXPECT_EQ(adjusted.adjust().annotations().at("big").size(), 10000u);
  EXPECT_LE(runtime.largestFrameSeen(), kMuxWriteChunkBytes);
}

TEST_F(NriSession, LifecycleEventsAndShutdownReachThePlugin) {
  ContainerEventRequest ev;
  ev.mutable_pod()->set_uid("u1");
  ev.mutable_container()->set_id("c1");
  runtime.sendRequest(1, "RemoveContainer", ev.SerializeAsString());
  runtime.sendRequest(3, "RunPodSandbox", ev.SerializeAsString());
  StateChangeEvent sc;
  sc.set_event(START_CONTAINER);
  sc.mutable_pod()->set_uid("u2");
  runtime.sendRequest(5, "StateChange", sc.SerializeAsString());
  runtime.sendRequest(7, "Shutdown", "");
  ASSERT_TRUE(session->serve(1s).isOk());
  EXPECT_EQ(plugin.events, (std::vector<std::string>{"11:u1:c1", "1:u1:-", "6:u2:-"}));
  EXPECT_EQ(plugin.shutdowns, 1);
  for (int i = 0; i < 4; ++i) {
    auto r = runtime.receiveResponse();
    ASSERT_TRUE(r);
    EXPECT_FALSE(r->has_status());
  }
}

// The codes upstream's ttrpc server answers with, so the runtime reacts the same way.
TEST_F(NriSession, ProtocolViolationsAreAnsweredAsUpstreamDoes) {
  runtime.sendRequest(2, "Configure", configureRequest());                      // even stream
  runtime.sendRequest(5, "NoSuchMethod", "");                                   // unknown method
  runtime.sendRequest(7, "Configure", "", "nri.pkg.api.v1alpha1.Other");        // unknown service
  runtime.sendRequest(7, "Configure", configureRequest());                      // reused stream
  runtime.sendMessage(kPluginServiceConn, 9, kMessageTypeRequest, "\xff\xff");  // not protobuf
  runtime.sendMessage(kPluginServiceConn, 11, kMessageTypeData, "x");           // no open stream
  runtime.sendRequest(13, "CreateContainer", "\x0a\x05\x0a");                   // bad payload
  ASSERT_TRUE(session->serve(1s).isOk());
  std::vector<std::pair<uint32_t, int32_t>> got;
  for (int i = 0; i < 7; ++i) {
    uint32_t stream = 0;
    auto r = runtime.receiveResponse(&stream);
    ASSERT_TRUE(r) << i;
    got.emplace_back(stream, r->status().code());
  }
  EXPECT_EQ(got, (std::vector<std::pair<uint32_t, int32_t>>{
                     {2, 3}, {5, 12}, {7, 12}, {7, 3}, {9, 3}, {11, 3}, {13, 3}}));
  EXPECT_TRUE(plugin.configured.empty());
}

TEST(NriSessionLimits, OversizedRequestIsRefusedAndTheSessionGoesOn) {
  FakeRuntime runtime;
  TestPlugin plugin;
  PluginDispatcher dispatcher(&plugin);
  Session session(runtime.connect(), &dispatcher, Session::Options{.maxMessageDataBytes = 256});
  runtime.sendRequest(1, "CreateContainer", std::string(1000, 'x'));
  runtime.sendRequest(3, "Shutdown", "");
  ASSERT_TRUE(session.serve(1s).isOk());
  uint32_t stream = 0;
  auto first = runtime.receiveResponse(&stream);
  ASSERT_TRUE(first);
  EXPECT_EQ(stream, 1u);
  EXPECT_EQ(first->status().code(), 8);  // RESOURCE_EXHAUSTED
  auto second = runtime.receiveResponse(&stream);
  ASSERT_TRUE(second);
  EXPECT_EQ(stream, 3u);
  EXPECT_FALSE(second->has_status());
  EXPECT_EQ(plugin.shutdowns, 1);
}

TEST(NriSessionLimits, OversizedReplyBecomesAnErrorReply) {
  FakeRuntime runtime;
  TestPlugin plugin;
  PluginDispatcher dispatcher(&plugin);
  Session session(runtime.connect(), &dispatcher, Session::Options{.maxMessageDataBytes = 1024});
  CreateContainerRequest create;
  create.mutable_container()->set_name("huge");
  runtime.sendRequest(1, "CreateContainer", create.SerializeAsString());
  ASSERT_TRUE(session.serve(1s).isOk());
  auto r = runtime.receiveResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status().code(), 8);
}

TEST(NriSessionLimits, FramesOnUnknownConnectionsAreDropped) {
  FakeRuntime runtime;
  TestPlugin plugin;
  PluginDispatcher dispatcher(&plugin);
  Session session(runtime.connect(), &dispatcher);
  runtime.sendMessage(9, 1, kMessageTypeRequest, "ignored");
  runtime.sendRequest(1, "Shutdown", "");
  ASSERT_TRUE(session.serve(1s).isOk());
  EXPECT_EQ(session.droppedFrames(), 1u);
  EXPECT_EQ(plugin.shutdowns, 1);
}

TEST(NriSessionLimits, ReplyToARuntimeThatStopsReadingTimesOut) {
  FakeRuntime runtime;
  TestPlugin plugin;
  PluginDispatcher dispatcher(&plugin);
  int fd = runtime.connect();
  int small = 4096;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
  setsockopt(runtime.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  Session session(fd, &dispatcher, Session::Options{.writeTimeout = 100ms});
  // Replies of ~10 KB each, never read by the runtime, fill the socket buffers.
  CreateContainerRequest create;
  create.mutable_container()->set_name("huge");
  for (uint32_t stream = 1; stream < 200; stream += 2) {
    runtime.sendRequest(stream, "CreateContainer", create.SerializeAsString());
  }
  auto start = std::chrono::steady_clock::now();
  Status s;
  for (int i = 0; i < 100 && s.isOk(); ++i) {
    s = session.serve(100ms);
  }
  EXPECT_EQ(s.code(), Status::Code::kTimedOut) << s.toString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

class ReentrantPlugin : public TestPlugin {
 public:
  Session* session = nullptr;
  Status nested;
  void shutdown() override {
    std::string out;
    nested = session->call(kRuntimeService, "UpdateContainers", "", &out, 10ms);
  }
};

TEST(NriSessionLimits, CallFromInsideAHandlerIsRefused) {
  FakeRuntime runtime;
  ReentrantPlugin plugin;
  PluginDispatcher dispatcher(&plugin);
  Session session(runtime.connect(), &dispatcher);
  plugin.session = &session;
  runtime.sendRequest(1, "Shutdown", "");
  ASSERT_TRUE(session.serve(1s).isOk());
  EXPECT_EQ(plugin.nested.code(), Status::Code::kNotAllowed);
}

}  // namespace
}  // namespace ker::nri
