// libFuzzer target: the NRI protocol layer fed whatever a runtime could put on the socket.
// The mux and ttrpc decoders, the envelope and NRI message parsers and the plugin dispatcher
// must never crash, read out of bounds or grow past their limits; every input is also fed in
// two pieces, split where the first byte says, and must decode to the same messages.

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "nri/mux.h"
#include "nri/plugin_service.h"
#include "nri/proto/ttrpc.pb.h"
#include "nri/ttrpc_message.h"

namespace {

using namespace ker::nri;

// Small limits, so that oversized messages are reachable within the fuzzer's input size.
constexpr size_t kMaxData = 2048;

class NullPlugin : public Plugin {
 public:
  Status configure(const ConfigureRequest&, ConfigureResponse* resp) override {
    resp->set_events(eventBit(CREATE_CONTAINER));
    return Status::ok();
  }
  Status createContainer(const CreateContainerRequest& req,
                         CreateContainerResponse* resp) override {
    if (req.pod().uid().empty()) {
      return Status::rpcError(RpcCode::kFailedPrecondition, "no pod uid");
    }
    resp->mutable_adjust()->add_env()->set_key(req.container().name());
    return Status::ok();
  }
};

// Decodes `input` fed as the given pieces; returns a trace of what came out.
std::string decode(std::string_view input, size_t cut) {
  MuxDecoder mux(kMaxData + kMessageHeaderBytes);
  MessageDecoder conns[2] = {MessageDecoder(kMaxData), MessageDecoder(kMaxData)};
  NullPlugin plugin;
  PluginDispatcher dispatcher(&plugin);
  std::string trace;
  for (std::string_view piece : {input.substr(0, cut), input.substr(cut)}) {
    mux.feed(piece);
    for (;;) {
      MuxFrame frame;
      bool ready = false;
      Status s = mux.next(&frame, &ready);
      if (!s.isOk()) {
        return trace + "corrupt";
      }
      if (!ready) {
        break;
      }
      if (frame.payload.size() > kMaxData + kMessageHeaderBytes) {
        std::abort();
      }
      if (frame.conn != kPluginServiceConn && frame.conn != kRuntimeServiceConn) {
        trace += "drop;";
        continue;
      }
      MessageDecoder& d = conns[frame.conn - 1];
      d.feed(frame.payload);
      Message m;
      for (auto r = d.next(&m); r != MessageDecoder::Result::kNeedMore; r = d.next(&m)) {
        if (m.data.size() > kMaxData) {
          std::abort();
        }
        trace += std::to_string(frame.conn) + ":" + std::to_string(m.header.streamId) + ":" +
                 std::to_string(static_cast<int>(r)) + ":" + std::to_string(m.data.size()) + ";";
        if (r != MessageDecoder::Result::kMessage) {
          continue;
        }
        if (frame.conn == kRuntimeServiceConn) {
          ker::ttrpc::Response resp;
          (void)resp.ParseFromString(m.data);
          continue;
        }
        ker::ttrpc::Request req;
        if (!req.ParseFromString(m.data)) {
          continue;
        }
        IncomingRequest in{.service = req.service(),
                           .method = req.method(),
                           .payload = req.payload(),
                           .timeout = std::chrono::nanoseconds(req.timeout_nano())};
        std::string out;
        trace += dispatcher.handle(in, &out).toString() + ";";
      }
    }
  }
  return trace;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string whole = decode(input, input.size());
  size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  if (decode(input, cut) != whole) {
    std::abort();
  }
  return 0;
}
