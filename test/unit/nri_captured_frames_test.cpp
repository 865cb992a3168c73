// Frames captured from the upstream Go code (see testdata/nri/README.md): the decoders must
// parse them, and the Session must answer them with the bytes the Go plugin stub sent.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nri/mux.h"
#include "nri/plugin_service.h"
#include "nri/proto/nri.pb.h"
#include "nri/proto/ttrpc.pb.h"
#include "nri/session.h"
#include "nri/ttrpc_message.h"
#include "nri_fake_runtime.h"
#include "testdata.h"

namespace ker::nri {
namespace {

using namespace std::chrono_literals;

std::string unhex(const std::string& hex) {
  std::string out;
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i + 1 < hex.size() && hex[i] != '\n'; i += 2) {
    out.push_back(static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1])));
  }
  return out;
}

std::string captured(const std::string& name) {
  return unhex(ker::testing::readTestdata("nri/" + name + ".hex"));
}

struct Decoded {
  uint32_t conn;
  Message message;
};

// Every ttrpc message of a captured byte stream, in order, with the mux frame sizes.
std::vector<Decoded> decodeStream(const std::string& stream, std::vector<size_t>* frameSizes) {
  MuxDecoder mux;
  MessageDecoder conn1, conn2;
  std::vector<Decoded> out;
  mux.feed(stream);
  MuxFrame f;
  bool ready = false;
  for (;;) {
    EXPECT_TRUE(mux.next(&f, &ready).isOk());
    if (!ready) {
      break;
    }
    frameSizes->push_back(f.payload.size());
    MessageDecoder& d = f.conn == kPluginServiceConn ? conn1 : conn2;
    EXPECT_TRUE(f.conn == kPluginServiceConn || f.conn == kRuntimeServiceConn) << f.conn;
    d.feed(f.payload);
    Message m;
    while (d.next(&m) == MessageDecoder::Result::kMessage) {
      out.push_back({f.conn, m});
    }
  }
  EXPECT_FALSE(mux.midFrame());
  EXPECT_FALSE(conn1.midMessage());
  EXPECT_FALSE(conn2.midMessage());
  return out;
}

ker::ttrpc::Request asRequest(const Message& m) {
  ker::ttrpc::Request r;
  EXPECT_EQ(m.header.type, kMessageTypeRequest);
  EXPECT_TRUE(r.ParseFromString(m.data));
  return r;
}

ker::ttrpc::Response asResponse(const Message& m) {
  ker::ttrpc::Response r;
  EXPECT_EQ(m.header.type, kMessageTypeResponse);
  EXPECT_TRUE(r.ParseFromString(m.data));
  return r;
}

// containerd v2.4.2 (NRI v0.12.3) and the upstream stub: register, Configure, Synchronize.
TEST(NriCapturedFrames, RegistrationWithContainerd) {
  std::vector<size_t> sizes;
  auto toRuntime = decodeStream(captured("register.plugin-to-runtime"), &sizes);
  ASSERT_EQ(toRuntime.size(), 3u);
  EXPECT_EQ(toRuntime[0].conn, kRuntimeServiceConn);
  EXPECT_EQ(toRuntime[0].message.header.streamId, 1u);
  auto reg = asRequest(toRuntime[0].message);
  EXPECT_EQ(reg.service(), kRuntimeService);
  EXPECT_EQ(reg.method(), "RegisterPlugin");
  EXPECT_GT(reg.timeout_nano(), 0);
  RegisterPluginRequest regReq;
  ASSERT_TRUE(regReq.ParseFromString(reg.payload()));
  EXPECT_EQ(regReq.plugin_name(), "ker-capture");
  EXPECT_EQ(regReq.plugin_idx(), "10");
  EXPECT_EQ(regReq.nri_version(), "v0.12.3");

  sizes.clear();
  auto toPlugin = decodeStream(captured("register.runtime-to-plugin"), &sizes);
  ASSERT_EQ(toPlugin.size(), 3u);
  // The answer to RegisterPlugin: a Response with neither status nor payload, 0 bytes.
  EXPECT_EQ(toPlugin[0].conn, kRuntimeServiceConn);
  EXPECT_EQ(toPlugin[0].message.header.type, kMessageTypeResponse);
  EXPECT_EQ(toPlugin[0].message.header.length, 0u);

  EXPECT_EQ(toPlugin[1].conn, kPluginServiceConn);
  EXPECT_EQ(toPlugin[1].message.header.streamId, 1u);
  auto configure = asRequest(toPlugin[1].message);
  EXPECT_EQ(configure.service(), kPluginService);
  EXPECT_EQ(configure.method(), "Configure");
  ConfigureRequest cfg;
  ASSERT_TRUE(cfg.ParseFromString(configure.payload()));
  EXPECT_EQ(cfg.runtime_name(), "containerd");
  EXPECT_EQ(cfg.runtime_version(), "v2.4.2");
  EXPECT_EQ(cfg.registration_timeout(), 5000);
  EXPECT_EQ(cfg.request_timeout(), 2000);
  EXPECT_EQ(cfg.nri_version(), "v0.12.3");

  EXPECT_EQ(toPlugin[2].message.header.streamId, 3u);
  auto sync = asRequest(toPlugin[2].message);
  EXPECT_EQ(sync.method(), "Synchronize");
  SynchronizeRequest syncReq;
  ASSERT_TRUE(syncReq.ParseFromString(sync.payload()));
  EXPECT_EQ(syncReq.pods_size(), 0);
  EXPECT_FALSE(syncReq.more());
}

TEST(NriCapturedFrames, RefusedRegistration) {
  std::vector<size_t> sizes;
  auto toPlugin = decodeStream(captured("register-refused.runtime-to-plugin"), &sizes);
  ASSERT_EQ(toPlugin.size(), 1u);
  auto resp = asResponse(toPlugin[0].message);
  EXPECT_EQ(resp.status().code(), 2);  // UNKNOWN: a plain Go error
  EXPECT_NE(resp.status().message().find("invalid plugin name"), std::string::npos);
  EXPECT_TRUE(resp.payload().empty());
}

// The upstream runtime side (pkg/adaptation) sending CreateContainer to the upstream stub.
TEST(NriCapturedFrames, CreateContainerRequestsAndAdjustments) {
  std::vector<size_t> sizes;
  auto toPlugin = decodeStream(captured("create.runtime-to-plugin"), &sizes);
  ASSERT_EQ(toPlugin.size(), 6u);
  // The 10 KB request came as two frames, the second over 4096 bytes: Go's bufio.Writer
  // flushes a full buffer, then writes the rest directly.
  ASSERT_GE(sizes.size(), 2u);
  EXPECT_EQ(sizes[sizes.size() - 2], 4096u);
  EXPECT_GT(sizes.back(), 4096u);

  std::vector<std::string> names;
  for (size_t i = 3; i < 6; ++i) {
    auto req = asRequest(toPlugin[i].message);
    EXPECT_EQ(req.method(), "CreateContainer");
    EXPECT_EQ(toPlugin[i].message.header.streamId, 2 * i - 1);
    CreateContainerRequest create;
    ASSERT_TRUE(create.ParseFromString(req.payload()));
    EXPECT_EQ(create.pod().uid(), "8c2f0d3e-1111-4222-8333-944455556666");
    EXPECT_EQ(create.pod().namespace_(), "demo");
    EXPECT_EQ(create.pod().name(), "p1");
    EXPECT_EQ(create.pod().annotations().at("extendedresource.io/claims"), "claim-0");
    EXPECT_EQ(create.container().pod_sandbox_id(), "sandbox-1");
    names.push_back(create.container().name());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"with-device", "refused", "big"}));

  sizes.clear();
  auto toRuntime = decodeStream(captured("create.plugin-to-runtime"), &sizes);
  ASSERT_EQ(toRuntime.size(), 6u);
  CreateContainerResponse adjusted;
  ASSERT_TRUE(adjusted.ParseFromString(asResponse(toRuntime[3].message).payload()));
  const auto& adj = adjusted.adjust();
  ASSERT_EQ(adj.env_size(), 1);
  EXPECT_EQ(adj.env(0).key(), "KER_DEVICE_IDS");
  EXPECT_EQ(adj.env(0).value(), "dev-0");
  ASSERT_EQ(adj.linux().devices_size(), 1);
  EXPECT_EQ(adj.linux().devices(0).path(), "/dev/null");
  EXPECT_EQ(adj.linux().devices(0).type(), "c");
  EXPECT_EQ(adj.linux().devices(0).major(), 1);
  EXPECT_EQ(adj.linux().devices(0).minor(), 3);
  EXPECT_EQ(adj.linux().devices(0).file_mode().value(), 0666u);
  ASSERT_EQ(adj.mounts_size(), 1);
  EXPECT_EQ(adj.mounts(0).destination(), "/var/run/ker");
  EXPECT_EQ(adj.mounts(0).options_size(), 2);
  ASSERT_EQ(adj.cdi_devices_size(), 1);
  EXPECT_EQ(adj.cdi_devices(0).name(), "example.com/dev=0");

  auto refused = asResponse(toRuntime[4].message);
  EXPECT_EQ(toRuntime[4].message.header.streamId, 7u);
  EXPECT_EQ(refused.status().code(), 2);
  EXPECT_EQ(refused.status().message(),
            "claim demo/claim-0 is not bound to pod demo/p1 on this node");
}

// Mirrors the Go plugin of the captures: subscribes to CreateContainer only.
class MirrorPlugin : public Plugin {
 public:
  Status configure(const ConfigureRequest&, ConfigureResponse* resp) override {
    resp->set_events(eventBit(CREATE_CONTAINER));
    return Status::ok();
  }
  Status createContainer(const CreateContainerRequest& req,
                         CreateContainerResponse* resp) override {
    if (req.container().name() == "refused") {
      return Status::rpcError(RpcCode::kUnknown,
                              "claim demo/claim-0 is not bound to pod demo/p1 on this node");
    }
    resp->mutable_adjust()->add_env()->set_key("KER_DEVICE_IDS");
    return Status::ok();
  }
};

// Replays what containerd and the upstream adaptation sent into a Session: it must register,
// be configured and answer every request, byte for byte as the Go stub did where the content
// is the same (registration payload, Configure, Synchronize, the refusal).
TEST(NriCapturedFrames, SessionAnswersTheCapturedRuntimeLikeTheGoStub) {
  testing::FakeRuntime runtime;
  MirrorPlugin plugin;
  PluginDispatcher dispatcher(&plugin);
  Session session(runtime.connect(), &dispatcher);
  runtime.sendRaw(captured("create.runtime-to-plugin"));
  ASSERT_TRUE(registerPlugin(&session, "ker-capture", "10", 1s).isOk());
  ASSERT_TRUE(session.serve(100ms).isOk());

  std::vector<size_t> sizes;
  auto goStub = decodeStream(captured("create.plugin-to-runtime"), &sizes);
  ASSERT_EQ(goStub.size(), 6u);

  auto ours = runtime.receive(kRuntimeServiceConn);
  ASSERT_TRUE(ours);
  EXPECT_EQ(ours->header.streamId, goStub[0].message.header.streamId);
  EXPECT_EQ(asRequest(*ours).payload(), asRequest(goStub[0].message).payload());
  for (size_t i = 1; i < 6; ++i) {
    auto reply = runtime.receive(kPluginServiceConn);
    ASSERT_TRUE(reply) << i;
    EXPECT_EQ(reply->header.streamId, goStub[i].message.header.streamId) << i;
    if (i == 3 || i == 5) {
      continue;  // adjustments differ in content: Go's stub adds more
    }
    EXPECT_EQ(reply->data, goStub[i].message.data) << i;
  }
}

}  // namespace
}  // namespace ker::nri
