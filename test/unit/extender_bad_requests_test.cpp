// Malformed and hostile requests against the extender's real HTTP server: ExtenderApp, wired
// as in production, over the fake API server, on loopback. Every request must get a clear
// answer within a bounded time, and the server must go on serving valid requests.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include "common/api_error.h"
#include "common/http_server.h"
#include "scheduler/extender_app.h"
#include "test/unit/eventually.h"
#include "test/unit/extender_cluster.h"
#include "test/unit/fake_api_client.h"
#include "test/unit/testdata.h"

namespace ker {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

// What ExtenderApp's server uses for every timeout it does not configure itself.
const HttpServerOptions kServerDefaults;

struct Reply {
  int status = 0;  // 0: no status line arrived
  std::string head;
  std::string body;
  bool closed = false;  // the server closed the connection
  Clock::duration elapsed{};
};

// A loopback TCP connection to the server, so the test controls every byte: stalls, bodies
// over the limit, bytes that are not UTF-8.
class Socket {
 public:
  explicit Socket(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      throw std::runtime_error(std::string("connect: ") + std::strerror(errno));
    }
  }
  ~Socket() { ::close(fd_); }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  // Sends data; stops early (false) when the server answers, closes, or the deadline passes,
  // since a server refusing a body need not read it.
  bool send(std::string_view data, Clock::time_point deadline) {
    while (!data.empty() && Clock::now() < deadline) {
      pollfd p{fd_, POLLIN | POLLOUT, 0};
      if (::poll(&p, 1, 50) < 0 || (p.revents & (POLLIN | POLLERR | POLLHUP)) != 0) {
        return false;
      }
      if ((p.revents & POLLOUT) == 0) {
        continue;
      }
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return false;
      }
      data.remove_prefix(n > 0 ? static_cast<size_t>(n) : 0);
    }
    return data.empty();
  }

  // Reads until the server closes the connection or the timeout passes.
  Reply read(std::chrono::milliseconds timeout) {
    const auto start = Clock::now();
    std::string raw;
    Reply r;
    while (Clock::now() - start < timeout) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) {
        continue;
      }
      char buf[16384];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        r.closed = true;  // orderly close or reset: either way the server let go
        break;
      }
      raw.append(buf, static_cast<size_t>(n));
    }
    r.elapsed = Clock::now() - start;
    const size_t headEnd = raw.find("\r\n\r\n");
    r.head = raw.substr(0, headEnd);
    if (headEnd != std::string::npos) {
      r.body = raw.substr(headEnd + 4);
    }
    if (raw.rfind("HTTP/1.1 ", 0) == 0 && raw.size() >= 12) {
      r.status = std::stoi(raw.substr(9, 3));
    }
    return r;
  }

 private:
  int fd_;
};

std::string request(const std::string& method, const std::string& path, const std::string& body) {
  return method + " " + path +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Connection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

class ExtenderBadRequests : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::seedExtenderCluster(api_);
    ExtenderConfig config;
    config.bindAddress = "127.0.0.1";
    config.port = 0;
    app_ = std::make_unique<ExtenderApp>(api_, config);
    app_->start();
    const auto deadline = Clock::now() + 10s;
    while (!app_->ready() && Clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
    ASSERT_TRUE(app_->ready()) << "caches did not sync";
  }

  Reply post(const std::string& path, const std::string& body) {
    Socket s(app_->port());
    s.send(request("POST", path, body), Clock::now() + 5s);
    return s.read(5s);
  }

  // A request kube-scheduler really sends still gets its normal answer.
  void expectServing() {
    const Reply r = post("/filter", testing::readTestdata("filter_nodenames.json"));
    ASSERT_EQ(r.status, 200) << r.head << "\n" << r.body;
    EXPECT_LT(r.elapsed, 2s);
    EXPECT_EQ(json::parse(r.body)["NodeNames"], json::array({"node-a"}));
  }

  testing::FakeApiClient api_;
  std::unique_ptr<ExtenderApp> app_;
};

// Sent as soon as the port accepts, before the caches have listed (every list fails until the
// request is in, then the lists are retried after their backoff): answered once they have
// listed, not refused. Lists fail for every informer alike: a single failure would go to
// whichever informer lists first, which may be one that readiness does not wait for.
TEST(ExtenderStartup, ARequestBeforeTheCachesHaveSyncedWaitsForThem) {
  testing::FakeApiClient api;
  testing::seedExtenderCluster(api);
  api.failNext(testing::FakeApiClient::Verb::kList,
               ApiError(ApiErrorKind::kServerError, 500, "", "etcd down"), -1);
  ExtenderConfig config;
  config.bindAddress = "127.0.0.1";
  config.port = 0;
  ExtenderApp app(api, config);
  app.start();
  ASSERT_FALSE(app.ready());
  Socket s(app.port());
  s.send(request("POST", "/filter", testing::readTestdata("filter_nodenames.json")),
         Clock::now() + 5s);
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(app.ready());
  api.clearFailures();
  const Reply r = s.read(10s);
  ASSERT_EQ(r.status, 200) << r.head << "\n" << r.body;
  EXPECT_EQ(json::parse(r.body)["NodeNames"], json::array({"node-a"}));
  // Readiness also waits for the preemption caches (on by default), which list on their own
  // backoff.
  EXPECT_TRUE(testing::eventually([&] { return app.ready(); }, 10s));
}

// Lists of one resource fail while `failing` is set.
class FailingListApi : public testing::FakeApiClient {
 public:
  explicit FailingListApi(Resource res) : res_(std::move(res)) {}
  nlohmann::json list(const Resource& res, const std::string& ns,
                      const ListOptions& opts) override {
    if (failing && res.plural == res_.plural) {
      throw ApiError(ApiErrorKind::kForbidden, 403, "Forbidden", "not yet");
    }
    return FakeApiClient::list(res, ns, opts);
  }
  std::atomic<bool> failing{true};

 private:
  Resource res_;
};

// With preemption, victims are counted against the PodDisruptionBudgets: until those are listed
// every budget would read as unviolated, so the extender says it is not ready (and adds no
// victim); requests are served meanwhile.
TEST(ExtenderStartup, WithPreemptionItIsReadyOnlyOnceTheBudgetsAreListed) {
  FailingListApi api(resources::kPodDisruptionBudgets);
  testing::seedExtenderCluster(api);
  ExtenderConfig config;
  config.bindAddress = "127.0.0.1";
  config.port = 0;
  config.preemption = true;
  ExtenderApp app(api, config);
  app.start();
  std::this_thread::sleep_for(500ms);
  EXPECT_FALSE(app.ready());
  Socket s(app.port());
  s.send(request("POST", "/filter", testing::readTestdata("filter_nodenames.json")),
         Clock::now() + 5s);
  const Reply r = s.read(5s);
  ASSERT_EQ(r.status, 200) << r.head << "\n" << r.body;
  EXPECT_EQ(json::parse(r.body)["NodeNames"], json::array({"node-a"}));
  api.failing = false;
  EXPECT_TRUE(testing::eventually([&] { return app.ready(); }, 10s));
}

// A valid body with one field replaced by raw JSON text (which may be anything at all).
std::string withField(json valid, const std::string& field, const std::string& raw) {
  valid.erase(field);
  return "{\"" + field + "\":" + raw + "," + valid.dump().substr(1);
}

std::string filterWith(const std::string& field, const std::string& raw) {
  return withField(json::parse(testing::readTestdata("filter_nodenames.json")), field, raw);
}

std::string bindWith(const std::string& field, const std::string& raw) {
  return withField({{"PodName", "web-0"},
                    {"PodNamespace", "default"},
                    {"PodUID", testing::kWebPodUid},
                    {"Node", "node-a"}},
                   field, raw);
}

TEST_F(ExtenderBadRequests, EachGetsA400NamingTheProblemAndServingGoesOn) {
  const std::string pod = R"({"metadata":{"name":"p","namespace":"default","uid":"u"}})";
  struct Case {
    std::string verb;
    std::string body;
    std::string error;  // expected in the reply's Error field
  } cases[] = {
      {"filter", "", "empty request body"},
      {"bind", "", "empty request body"},
      {"filter", testing::readTestdata("filter_nodenames.json").substr(0, 300), "malformed JSON"},
      {"bind", R"({"PodName":"web-0","PodUID")", "malformed JSON"},
      {"filter", std::string(1'000'000, '['), "nested deeper than 64 levels"},
      {"prioritize", std::string(100'000, '{'), "malformed JSON"},
      {"filter", R"({"Pod":)" + pod + R"(,"NodeNames":[1e999]})", "number overflow"},
      {"bind", bindWith("PodUID", "-1e400"), "number overflow"},
      {"filter", R"({"Pod":)" + pod + R"(,"NodeNames":[18446744073709551616]})",
       "NodeNames must hold strings"},
      {"bind", bindWith("Node", "1e308"), "Node must be a string, got number"},
      {"filter", "null", "ExtenderArgs must be a JSON object, got null"},
      {"prioritize", "42", "ExtenderArgs must be a JSON object, got number"},
      {"bind", "[]", "ExtenderBindingArgs must be a JSON object, got array"},
      {"filter", filterWith("Pod", R"("web-0")"), "Pod must be an object, got string"},
      {"prioritize", filterWith("Pod", "[]"), "Pod must be an object, got array"},
      {"filter", filterWith("NodeNames", R"({"node-a":true})"),
       "NodeNames must be an array, got object"},
      {"filter", filterWith("NodeNames", "[null]"), "NodeNames must hold strings"},
      {"filter", R"({"Pod":)" + pod + R"(,"Nodes":"node-a"})",
       "Nodes must be a NodeList object, got string"},
      {"prioritize", R"({"Pod":)" + pod + R"(,"Nodes":{"items":{"metadata":{}}}})",
       "Nodes.items must be an array"},
      {"filter", R"({"Pod":)" + pod + R"(,"Nodes":{"items":[42]}})",
       "Nodes.items must hold Node objects"},
      {"filter", R"({"Pod":)" + pod + R"(,"Nodes":{"items":[{"metadata":{"name":7}}]}})",
       "Nodes.items[].metadata.name is required"},
      {"filter", R"({"Pod":{"metadata":{"name":["p"],"uid":"u"}},"NodeNames":[]})",
       "Pod.metadata.name is required"},
      {"bind", bindWith("Node", "7"), "Node must be a string, got number"},
      {"bind", bindWith("PodUID", R"(["fake-uid-1"])"), "PodUID must be a string, got array"},
      {"bind", bindWith("PodName", "{}"), "PodName must be a string, got object"},
      {"bind", bindWith("PodNamespace", "true"), "PodNamespace must be a string, got boolean"},
      {"bind", R"({"PodName":"web-0","PodUID":"fake-uid-1"})", "Node is required"},
      {"bind", bindWith("PodName", R"("")"), "must not be empty"},
      // Not UTF-8: a stray byte, an overlong '/', a lone surrogate.
      {"filter", filterWith("NodeNames", "[\"node-\xff\"]"), "malformed JSON"},
      {"bind", bindWith("Node", "\"\xc0\xaf\""), "malformed JSON"},
      {"prioritize", filterWith("NodeNames", R"(["\ud800"])"), "malformed JSON"},
      // Duplicate keys: the last one counts, as in Go's encoding/json.
      {"bind", bindWith("Node", R"("node-a","Node":7)"), "Node must be a string, got number"},
      {"filter", filterWith("Pod", R"({"metadata":{"name":"p","uid":"u"}},"Pod":"x")"),
       "Pod must be an object, got string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.verb + " " + c.body.substr(0, 120));
    const Reply r = post("/" + c.verb, c.body);
    EXPECT_EQ(r.status, 400) << r.head;
    EXPECT_LT(r.elapsed, 2s);
    EXPECT_NE(r.head.find("Content-Type: application/json"), std::string::npos) << r.head;
    json reply;
    ASSERT_NO_THROW(reply = json::parse(r.body)) << r.body;
    const std::string error = reply.value("Error", "");
    EXPECT_EQ(error.rfind("bad " + c.verb + " request: ", 0), 0u) << error;
    EXPECT_NE(error.find(c.error), std::string::npos) << error;
  }
  expectServing();
}

TEST_F(ExtenderBadRequests, DuplicateKeysResolveToTheLastAsInGo) {
  const json sample = json::parse(testing::readTestdata("filter_nodenames.json"));
  const Reply r =
      post("/filter", filterWith("Pod", R"("not a pod","Pod":)" + sample["Pod"].dump()));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["NodeNames"], json::array({"node-a"}));
}

TEST_F(ExtenderBadRequests, UnknownPathsAndMethodsAreRefused) {
  const std::string body = testing::readTestdata("filter_nodenames.json");
  struct Case {
    std::string method;
    std::string path;
    bool knownPath;
  } cases[] = {
      {"GET", "/filter", true},        {"PUT", "/bind", true},
      {"DELETE", "/prioritize", true}, {"POST", "/", false},
      {"POST", "/filters", false},     {"POST", "/FILTER", false},
      {"POST", "/nope", false},        {"POST", "/filter/../bind", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.method + " " + c.path);
    Socket s(app_->port());
    s.send(request(c.method, c.path, body), Clock::now() + 5s);
    const Reply r = s.read(5s);
    if (c.knownPath) {
      // 405 would say more, but either way the verb's handler must not run.
      EXPECT_TRUE(r.status == 404 || r.status == 405) << r.head;
    } else {
      EXPECT_EQ(r.status, 404) << r.head;
    }
    EXPECT_LT(r.elapsed, 2s);
  }
  EXPECT_EQ(api_.calls(testing::FakeApiClient::Verb::kBind), 0);
  expectServing();
}

TEST_F(ExtenderBadRequests, BodyOverTheLimitGets400AndTheConnectionIsClosed) {
  const size_t limit = ExtenderConfig{}.maxBodyBytes;
  // Declared up front: refused from the headers, the body need not even be sent in full.
  {
    Socket s(app_->port());
    const std::string head =
        "POST /filter HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Content-Length: " +
        std::to_string(limit + 1) + "\r\n\r\n";
    s.send(head + "{\"Pod\":" + std::string(64 * 1024, ' '), Clock::now() + 5s);
    const Reply r = s.read(5s);
    EXPECT_EQ(r.status, 400) << r.head;
    EXPECT_EQ(nlohmann::json::parse(r.body, nullptr, false).value("Error", ""),
              "request body exceeds the limit of " + std::to_string(limit) + " bytes")
        << r.body;
    EXPECT_TRUE(r.closed);
    EXPECT_LT(r.elapsed, 2s);
  }
  // Chunked, so the size is only known while reading: cut off once past the limit.
  {
    Socket s(app_->port());
    const auto deadline = Clock::now() + 20s;
    bool sending = s.send(
        "POST /bind HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n", deadline);
    const std::string chunk = "100000\r\n" + std::string(size_t{1} << 20, ' ') + "\r\n";
    for (size_t sent = 0; sending && sent <= limit; sent += size_t{1} << 20) {
      sending = s.send(chunk, deadline);
    }
    const Reply r = s.read(5s);
    EXPECT_EQ(r.status, 400) << r.head;
    EXPECT_NE(r.body.find("exceeds the limit"), std::string::npos) << r.body;
    EXPECT_TRUE(r.closed);
  }
  EXPECT_EQ(api_.calls(testing::FakeApiClient::Verb::kBind), 0);
  expectServing();
}

TEST_F(ExtenderBadRequests, StalledClientsAreDroppedWhileOthersAreServed) {
  // One stops in the middle of its headers, one after its headers and part of the body.
  Socket midHeaders(app_->port());
  midHeaders.send("POST /filter HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le", Clock::now() + 1s);
  Socket midBody(app_->port());
  midBody.send(
      "POST /bind HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: 100\r\n\r\n{\"PodName\":",
      Clock::now() + 1s);
  const auto start = Clock::now();

  expectServing();
  EXPECT_LT(Clock::now() - start, 2s);

  // Dropped with a 400 once the server's read timeout passes.
  const auto bound = kServerDefaults.readTimeout + 3s;
  for (Socket* s : {&midHeaders, &midBody}) {
    const Reply r = s->read(bound);
    EXPECT_TRUE(r.closed) << "still connected after " << bound.count() << " ms";
    EXPECT_EQ(r.status, 400) << r.head;
  }
  EXPECT_LT(Clock::now() - start, bound);
  EXPECT_EQ(api_.calls(testing::FakeApiClient::Verb::kBind), 0);
  expectServing();
}

TEST_F(ExtenderBadRequests, RepliesAreNotCompressedEvenWhenTheClientAcceptsGzip) {
  // kube-scheduler's Go client sends Accept-Encoding: gzip; on loopback compressing large
  // replies only costs CPU on both sides.
  const std::string body = testing::readTestdata("filter_nodenames.json");
  std::string req = request("POST", "/filter", body);
  req.insert(req.find("\r\n") + 2, "Accept-Encoding: gzip\r\n");
  Socket sock(app_->port());
  sock.send(req, Clock::now() + 5s);
  const Reply r = sock.read(5s);
  ASSERT_EQ(r.status, 200) << r.head;
  EXPECT_EQ(r.head.find("Content-Encoding"), std::string::npos) << r.head;
  EXPECT_NE(r.head.find("Content-Type: application/json"), std::string::npos) << r.head;
  EXPECT_EQ(json::parse(r.body)["NodeNames"], json::array({"node-a"}));
}

TEST_F(ExtenderBadRequests, AValidBindStillBindsAfterTheNoise) {
  for (const char* body : {"", "{", "[]", R"({"PodName":1})"}) {
    EXPECT_EQ(post("/bind", body).status, 400);
  }
  // As from kube-scheduler: the filter chooses node-a, and the bind follows it.
  json filter = json::parse(testing::readTestdata("filter_nodenames.json"));
  filter["Pod"]["metadata"]["uid"] = testing::kWebPodUid;
  const Reply filtered = post("/filter", filter.dump());
  ASSERT_EQ(filtered.status, 200) << filtered.body;
  ASSERT_EQ(json::parse(filtered.body)["NodeNames"], json::array({"node-a"}));
  const Reply r = post("/bind", bindWith("Node", R"("node-a")"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["Error"], "");
  ASSERT_EQ(api_.bindings().size(), 1u);
  EXPECT_EQ(api_.bindings()[0].node, "node-a");
}

}  // namespace
}  // namespace ker
