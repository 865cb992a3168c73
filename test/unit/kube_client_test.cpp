#include "common/kube_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/api_error.h"
#include "common/request_deadline.h"
#include "model/objects.h"

namespace ker {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string statusJson(int code, const std::string& reason, const std::string& message) {
  return json{{"kind", "Status"}, {"apiVersion", "v1"}, {"status", "Failure"},
              {"code", code},     {"reason", reason},   {"message", message}}
      .dump();
}

KubeClientOptions fastOptions() {
  KubeClientOptions opts;
  opts.retryBaseDelay = 1ms;
  opts.maxRetryDelay = 2s;
  opts.requestTimeout = 5s;
  opts.connectTimeout = 2s;
  return opts;
}

template <typename F>
ApiError apiErrorOf(F&& call) {
  try {
    call();
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no ApiError thrown";
  return ApiError(ApiErrorKind::kOther, 0, "", "none");
}

// What the test server saw of one request.
struct Seen {
  std::string method;
  std::string path;    // decoded
  std::string target;  // as sent
  std::string body;
  httplib::Headers headers;
  httplib::Params params;
  int remotePort = 0;

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string("<none>") : it->second;
  }
  std::string param(const std::string& name) const {
    auto it = params.find(name);
    return it == params.end() ? std::string("<none>") : it->second;
  }
};

class KubeClientTest : public testing::Test {
 protected:
  void SetUp() override {
    server_ = makeServer();
    server_->set_keep_alive_max_count(1000);
    server_->set_tcp_nodelay(true);  // as the API server does; avoids Nagle/delayed-ACK stalls
    port_ = server_->bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
  }

  void TearDown() override {
    client_.reset();  // closes its connections first
    release_ = true;  // lets handlers that hold a response open return
    startServer();    // a server that never ran cannot be stopped
    server_->stop();
    serverThread_.join();
  }

  virtual std::unique_ptr<httplib::Server> makeServer() {
    return std::make_unique<httplib::Server>();
  }
  virtual std::string scheme() const { return "http"; }

  void startServer() {
    if (serverThread_.joinable()) {
      return;
    }
    serverThread_ = std::thread([this] { server_->listen_after_bind(); });
    while (!server_->is_running()) {
      std::this_thread::sleep_for(1ms);
    }
  }

  KubeConfig config() const {
    KubeConfig config;
    config.server = scheme() + "://127.0.0.1:" + std::to_string(port_);
    config.token = "secret-token";
    return config;
  }

  KubeClient& client(KubeConfig config, KubeClientOptions opts = fastOptions()) {
    startServer();
    client_ = std::make_unique<KubeClient>(std::move(config), std::move(opts));
    return *client_;
  }
  KubeClient& client(KubeClientOptions opts = fastOptions()) { return client(config(), opts); }

  void record(const httplib::Request& req) {
    std::lock_guard lock(mu_);
    seen_.push_back(
        {req.method, req.path, req.target, req.body, req.headers, req.params, req.remote_port});
  }
  std::vector<Seen> seen() {
    std::lock_guard lock(mu_);
    return seen_;
  }
  // Records the request and answers with a fixed status and body.
  httplib::Server::Handler reply(int status, std::string body) {
    return [this, status, body](const httplib::Request& req, httplib::Response& res) {
      record(req);
      res.status = status;
      res.set_content(body, "application/json");
    };
  }

  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::atomic<bool> release_{false};

 private:
  std::thread serverThread_;
  std::unique_ptr<KubeClient> client_;
  std::mutex mu_;
  std::vector<Seen> seen_;
};

TEST(ResourcePathTest, Paths) {
  EXPECT_EQ(resources::kPods.path("ns", "p"), "/api/v1/namespaces/ns/pods/p");
  EXPECT_EQ(resources::kPods.path(), "/api/v1/pods");
  EXPECT_EQ(resources::kPods.path("ns", "p", "binding"), "/api/v1/namespaces/ns/pods/p/binding");
  EXPECT_EQ(resources::kNodes.path("ignored", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(resources::kNamespaces.path("", "kube-system"), "/api/v1/namespaces/kube-system");
  EXPECT_EQ(resources::kEvents.path("ns"), "/api/v1/namespaces/ns/events");
  EXPECT_EQ(resources::kLeases.path("kube-system", "l"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/l");
  EXPECT_EQ(resources::kExtendedResources.path("ns", "gpu-0", "status"),
            "/apis/extendedresource.io/v1alpha1/extendedresources/gpu-0/status");
  EXPECT_EQ(resources::kExtendedResourceClaims.path("team"),
            "/apis/extendedresource.io/v1alpha1/namespaces/team/extendedresourceclaims");
}

TEST(ResourcePathTest, NamesAreEscaped) {
  EXPECT_EQ(resources::kPods.path("n s", "a/b?c"), "/api/v1/namespaces/n%20s/pods/a%2Fb%3Fc");
  EXPECT_EQ(resources::kNodes.path("", ".."), "/api/v1/nodes/%2E%2E");
  EXPECT_EQ(resources::kNodes.path("", "."), "/api/v1/nodes/%2E");
  EXPECT_EQ(resources::kNodes.path("", "a.b-c_d~"), "/api/v1/nodes/a.b-c_d~");
  EXPECT_EQ(urlEscape("app in (a,b),x!=ü"), "app%20in%20%28a%2Cb%29%2Cx%21%3D%C3%BC");
}

TEST_F(KubeClientTest, GetSendsHeadersAndReturnsTheObject) {
  server_->Get("/api/v1/namespaces/ns/pods/p1",
               reply(200, R"({"kind":"Pod","metadata":{"name":"p1"}})"));
  json pod = client().get(resources::kPods, "ns", "p1");
  EXPECT_EQ(pod["metadata"]["name"], "p1");
  auto requests = seen();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].header("Authorization"), "Bearer secret-token");
  EXPECT_EQ(requests[0].header("Accept"), "application/json");
  EXPECT_EQ(requests[0].header("User-Agent"), "kube-extended-resource");
  EXPECT_EQ(requests[0].header("Content-Type"), "<none>");
}

TEST_F(KubeClientTest, NoAuthorizationHeaderWithoutToken) {
  server_->Get("/api/v1/nodes/n", reply(200, "{}"));
  KubeConfig anonymous = config();
  anonymous.token.clear();
  client(anonymous).get(resources::kNodes, "", "n");
  EXPECT_EQ(seen().at(0).header("Authorization"), "<none>");
}

TEST_F(KubeClientTest, RotatedTokenFileIsSent) {
  std::string pattern = (std::filesystem::path(testing::TempDir()) / "token-XXXXXX").string();
  int fd = mkstemp(pattern.data());
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(pattern) << "first\n";
  server_->Get("/api/v1/nodes/n", reply(200, "{}"));
  KubeConfig rotating = config();
  rotating.token.clear();
  rotating.tokenFile = pattern;
  KubeClient& kube = client(rotating);
  kube.get(resources::kNodes, "", "n");
  std::ofstream(pattern) << "second-token\n";
  kube.get(resources::kNodes, "", "n");
  std::filesystem::remove(pattern);
  auto requests = seen();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].header("Authorization"), "Bearer first");
  EXPECT_EQ(requests[1].header("Authorization"), "Bearer second-token");
}

TEST_F(KubeClientTest, ErrorsAreTyped) {
  struct Case {
    int status;
    std::string reason;
    ApiErrorKind kind;
  };
  const std::vector<Case> cases = {
      {404, "NotFound", ApiErrorKind::kNotFound},
      {409, "Conflict", ApiErrorKind::kConflict},
      {409, "AlreadyExists", ApiErrorKind::kAlreadyExists},
      {410, "Expired", ApiErrorKind::kGone},
      {403, "Forbidden", ApiErrorKind::kForbidden},
      {401, "Unauthorized", ApiErrorKind::kUnauthorized},
      {422, "Invalid", ApiErrorKind::kInvalid},
      {500, "InternalError", ApiErrorKind::kServerError},
  };
  server_->Get(R"(/api/v1/namespaces/ns/pods/(\d+)-(\w+))", [](const httplib::Request& req,
                                                               httplib::Response& res) {
    int status = std::stoi(req.matches[1]);
    res.status = status;
    res.set_content(statusJson(status, req.matches[2], "because " + req.path), "application/json");
  });
  KubeClientOptions opts = fastOptions();
  opts.maxRetries = 0;
  KubeClient& kube = client(opts);
  for (const Case& c : cases) {
    std::string name = std::to_string(c.status) + "-" + c.reason;
    ApiError e = apiErrorOf([&] { kube.get(resources::kPods, "ns", name); });
    EXPECT_EQ(e.kind(), c.kind) << name << ": " << e.what();
    EXPECT_EQ(e.httpStatus(), c.status);
    EXPECT_EQ(e.reason(), c.reason);
    EXPECT_NE(std::string(e.what()).find("because /api/v1/namespaces/ns/pods/" + name),
              std::string::npos)
        << e.what();
  }
}

TEST_F(KubeClientTest, GetIsRetriedAfter429HonouringRetryAfter) {
  std::atomic<int> calls{0};
  server_->Get("/api/v1/nodes/n", [&](const httplib::Request&, httplib::Response& res) {
    if (calls++ == 0) {
      res.status = 429;
      res.set_header("Retry-After", "1");
      res.set_content(statusJson(429, "TooManyRequests", "slow down"), "application/json");
    } else {
      res.set_content(R"({"metadata":{"name":"n"}})", "application/json");
    }
  });
  KubeClient& kube = client();
  auto start = Clock::now();
  EXPECT_EQ(kube.get(resources::kNodes, "", "n")["metadata"]["name"], "n");
  EXPECT_GE(Clock::now() - start, 900ms);
  EXPECT_EQ(calls, 2);
}

TEST_F(KubeClientTest, RetryAfterIsCapped) {
  std::atomic<int> calls{0};
  server_->Get("/api/v1/nodes/n", [&](const httplib::Request&, httplib::Response& res) {
    if (calls++ == 0) {
      res.status = 429;
      res.set_header("Retry-After", "3600");
    } else {
      res.set_content("{}", "application/json");
    }
  });
  KubeClientOptions opts = fastOptions();
  opts.maxRetryDelay = 50ms;
  KubeClient& kube = client(opts);
  auto start = Clock::now();
  kube.get(resources::kNodes, "", "n");
  EXPECT_LT(Clock::now() - start, 2s);
  EXPECT_EQ(calls, 2);
}

TEST_F(KubeClientTest, GetIsRetriedOnServerErrors) {
  std::atomic<int> calls{0};
  server_->Get("/api/v1/nodes/n", [&](const httplib::Request&, httplib::Response& res) {
    if (calls++ < 2) {
      res.status = 503;
    } else {
      res.set_content("{}", "application/json");
    }
  });
  client().get(resources::kNodes, "", "n");
  EXPECT_EQ(calls, 3);
}

TEST_F(KubeClientTest, GetGivesUpAfterMaxRetries) {
  server_->Get("/api/v1/nodes/n", reply(500, statusJson(500, "InternalError", "boom")));
  KubeClientOptions opts = fastOptions();
  opts.maxRetries = 2;
  ApiError e = apiErrorOf([&] { client(opts).get(resources::kNodes, "", "n"); });
  EXPECT_EQ(e.kind(), ApiErrorKind::kServerError);
  EXPECT_EQ(seen().size(), 3u);
}

TEST_F(KubeClientTest, WriteIsRetriedOn429) {
  std::atomic<int> calls{0};
  server_->Post("/api/v1/namespaces/ns/pods", [&](const httplib::Request&, httplib::Response& res) {
    if (calls++ == 0) {
      res.status = 429;
      res.set_header("Retry-After", "0");
    } else {
      res.status = 201;
      res.set_content(R"({"metadata":{"name":"p","uid":"u1"}})", "application/json");
    }
  });
  json created = client().create(resources::kPods, "ns", {{"metadata", {{"name", "p"}}}});
  EXPECT_EQ(created["metadata"]["uid"], "u1");
  EXPECT_EQ(calls, 2);
}

// A string that is not UTF-8 is sent with U+FFFD in place of each bad byte, rather than the
// encoding throwing at a caller that expects only the API's errors.
TEST_F(KubeClientTest, AStringThatIsNotUtf8IsSentWithItsBadBytesReplaced) {
  std::string body;
  server_->Post("/api/v1/namespaces/ns/pods",
                [&](const httplib::Request& req, httplib::Response& res) {
                  body = req.body;
                  res.status = 201;
                  res.set_content(R"({"metadata":{"name":"p"}})", "application/json");
                });
  client().create(resources::kPods, "ns",
                  {{"metadata", {{"name", "p"}, {"annotations", {{"a", "x\xffy"}}}}}});
  EXPECT_NE(body.find("\"x\xEF\xBF\xBDy\""), std::string::npos) << body;
}

TEST_F(KubeClientTest, WritesAreNotRetriedOnServerErrors) {
  auto fail = reply(503, statusJson(503, "ServiceUnavailable", "down"));
  server_->Post("/api/v1/namespaces/ns/pods", fail);
  server_->Put("/api/v1/namespaces/ns/pods/p", fail);
  server_->Patch("/api/v1/namespaces/ns/pods/p", fail);
  server_->Delete("/api/v1/namespaces/ns/pods/p", fail);
  KubeClient& kube = client();
  json pod = {{"metadata", {{"name", "p"}}}};
  EXPECT_EQ(apiErrorOf([&] { kube.create(resources::kPods, "ns", pod); }).kind(),
            ApiErrorKind::kServerError);
  EXPECT_EQ(apiErrorOf([&] { kube.update(resources::kPods, "ns", pod); }).kind(),
            ApiErrorKind::kServerError);
  EXPECT_EQ(apiErrorOf([&] {
              kube.patch(resources::kPods, "ns", "p", PatchType::kMerge, json::object());
            }).kind(),
            ApiErrorKind::kServerError);
  EXPECT_EQ(apiErrorOf([&] { kube.remove(resources::kPods, "ns", "p"); }).kind(),
            ApiErrorKind::kServerError);
  EXPECT_EQ(seen().size(), 4u);
}

TEST_F(KubeClientTest, RequestTimeout) {
  server_->Get("/api/v1/nodes/slow", [&](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(600ms);
    res.set_content("{}", "application/json");
  });
  KubeClientOptions opts = fastOptions();
  opts.requestTimeout = 150ms;
  opts.maxRetries = 0;
  auto start = Clock::now();
  ApiError e = apiErrorOf([&] { client(opts).get(resources::kNodes, "", "slow"); });
  EXPECT_EQ(e.kind(), ApiErrorKind::kTimeout) << e.what();
  EXPECT_LT(Clock::now() - start, 500ms);
}

TEST_F(KubeClientTest, ACallerDeadlineCutsATryShort) {
  server_->Get("/api/v1/nodes/slow", [&](const httplib::Request&, httplib::Response& res) {
    std::this_thread::sleep_for(600ms);
    res.set_content("{}", "application/json");
  });
  KubeClientOptions opts = fastOptions();
  opts.maxRetries = 0;
  KubeClient& kube = client(opts);
  {
    RequestDeadline fence(RequestDeadline::Clock::now() + 150ms);
    ApiError e = apiErrorOf([&] { kube.get(resources::kNodes, "", "slow"); });
    EXPECT_EQ(e.kind(), ApiErrorKind::kTimeout) << e.what();
    RequestDeadline unfenced(std::nullopt);
    EXPECT_EQ(kube.get(resources::kNodes, "", "slow"), json::object()) << "an empty scope lifts it";
  }
  EXPECT_EQ(kube.get(resources::kNodes, "", "slow"), json::object()) << "the scope ended";
}

TEST_F(KubeClientTest, NoTryOrRetryStartsPastTheCallerDeadline) {
  server_->Post(
      "/api/v1/namespaces/ns/pods", [&](const httplib::Request& req, httplib::Response& res) {
        record(req);
        res.status = 429;
        res.set_header("Retry-After", "1");
        res.set_content(statusJson(429, "TooManyRequests", "slow down"), "application/json");
      });
  KubeClient& kube = client();
  const json pod = {{"metadata", {{"name", "p"}}}};
  {
    RequestDeadline fence(RequestDeadline::Clock::now() + 500ms);
    ApiError e = apiErrorOf([&] { kube.create(resources::kPods, "ns", pod); });
    EXPECT_EQ(e.httpStatus(), 429) << "the 1s wait would end past the deadline: " << e.what();
    EXPECT_EQ(seen().size(), 1u);
  }
  {
    RequestDeadline passed(RequestDeadline::Clock::now() - 1ms);
    ApiError e = apiErrorOf([&] { kube.create(resources::kPods, "ns", pod); });
    EXPECT_EQ(e.kind(), ApiErrorKind::kTimeout);
    EXPECT_NE(std::string(e.what()).find("not sent"), std::string::npos) << e.what();
    EXPECT_EQ(seen().size(), 1u) << "nothing sent";
  }
}

TEST_F(KubeClientTest, ListQueryParametersAreEncoded) {
  server_->Get("/api/v1/namespaces/ns/pods", reply(200, R"({"items":[]})"));
  ListOptions opts;
  opts.labelSelector = "app in (a,b),tier!=web";
  opts.fieldSelector = "spec.nodeName=node 1";
  opts.limit = 50;
  opts.continueToken = "tok/en+=";
  opts.resourceVersion = "0";
  client().list(resources::kPods, "ns", opts);
  Seen req = seen().at(0);
  EXPECT_EQ(req.param("labelSelector"), opts.labelSelector);
  EXPECT_EQ(req.param("fieldSelector"), opts.fieldSelector);
  EXPECT_EQ(req.param("limit"), "50");
  EXPECT_EQ(req.param("continue"), opts.continueToken);
  EXPECT_EQ(req.param("resourceVersion"), "0");
  EXPECT_EQ(req.target.find(' '), std::string::npos) << req.target;
}

TEST_F(KubeClientTest, ListWithoutOptionsSendsNoQuery) {
  server_->Get("/api/v1/pods", reply(200, R"({"items":[]})"));
  client().list(resources::kPods, "", {});
  EXPECT_EQ(seen().at(0).target, "/api/v1/pods");
}

// Serves `pages` pages of two items each, linked by continue tokens "p2", "p3", ...
httplib::Server::Handler pagedList(int pages, std::atomic<int>& firstPages,
                                   std::function<bool(const std::string&)> expire = {}) {
  return [=, &firstPages](const httplib::Request& req, httplib::Response& res) {
    std::string token = req.get_param_value("continue");
    if (expire && expire(token)) {
      res.status = 410;
      res.set_content(statusJson(410, "Expired", "continue token expired"), "application/json");
      return;
    }
    int page = token.empty() ? 1 : std::stoi(token.substr(1));
    if (page == 1) {
      ++firstPages;
    }
    // A resourceVersion next to a continue token is rejected by the real API.
    if (!token.empty() && req.has_param("resourceVersion")) {
      res.status = 400;
      return;
    }
    json list = {
        {"kind", "PodList"}, {"metadata", {{"resourceVersion", "100"}}}, {"items", json::array()}};
    for (int i = 0; i < 2; ++i) {
      list["items"].push_back({{"metadata", {{"name", "pod-" + std::to_string(page * 10 + i)}}}});
    }
    if (page < pages) {
      list["metadata"]["continue"] = "p" + std::to_string(page + 1);
    }
    res.set_content(list.dump(), "application/json");
  };
}

TEST_F(KubeClientTest, ListAllFollowsContinueTokens) {
  std::atomic<int> firstPages{0};
  server_->Get("/api/v1/pods", [&, handler = pagedList(3, firstPages)](const httplib::Request& req,
                                                                       httplib::Response& res) {
    record(req);
    handler(req, res);
  });
  ListOptions opts;
  opts.resourceVersion = "42";
  auto all = client().listAll(resources::kPods, "", opts, 2);
  ASSERT_EQ(all.items.size(), 6u);
  EXPECT_EQ(all.items.front()["metadata"]["name"], "pod-10");
  EXPECT_EQ(all.items.back()["metadata"]["name"], "pod-31");
  EXPECT_EQ(all.resourceVersion, "100");
  auto requests = seen();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].param("limit"), "2");
  EXPECT_EQ(requests[0].param("resourceVersion"), "42");
  EXPECT_EQ(requests[1].param("continue"), "p2");
  EXPECT_EQ(requests[2].param("continue"), "p3");
}

TEST_F(KubeClientTest, ListAllRestartsWhenTheContinueTokenExpires) {
  std::atomic<int> firstPages{0};
  std::atomic<bool> expired{false};
  server_->Get("/api/v1/pods", pagedList(3, firstPages, [&](const std::string& token) {
                 return token == "p3" && !expired.exchange(true);
               }));
  auto all = client().listAll(resources::kPods, "", {}, 2);
  EXPECT_EQ(all.items.size(), 6u);  // nothing from the abandoned attempt
  EXPECT_EQ(firstPages, 2);
}

TEST_F(KubeClientTest, ListAllGivesUpWhenTokensKeepExpiring) {
  std::atomic<int> firstPages{0};
  server_->Get("/api/v1/pods",
               pagedList(3, firstPages, [](const std::string& token) { return token == "p2"; }));
  ApiError e = apiErrorOf([&] { client().listAll(resources::kPods, "", {}, 2); });
  EXPECT_TRUE(e.isGone());
  EXPECT_EQ(firstPages, 3);
}

TEST_F(KubeClientTest, ListAllDoesNotRestartOnAGoneFirstPage) {
  server_->Get("/api/v1/pods", reply(410, statusJson(410, "Expired", "too old")));
  ListOptions opts;
  opts.resourceVersion = "1";
  EXPECT_TRUE(apiErrorOf([&] { client().listAll(resources::kPods, "", opts); }).isGone());
  EXPECT_EQ(seen().size(), 1u);
}

TEST_F(KubeClientTest, WritesUsePathsBodiesAndFieldManager) {
  server_->Post(".*", reply(201, "{}"));
  server_->Put(".*", reply(200, "{}"));
  KubeClient& kube = client();
  json claim = {{"metadata", {{"name", "c1"}, {"namespace", "team"}, {"resourceVersion", "5"}}},
                {"spec", {{"count", 1}}}};
  kube.create(resources::kExtendedResourceClaims, "", claim);
  kube.update(resources::kExtendedResourceClaims, "team", claim);
  kube.updateStatus(resources::kExtendedResources, "", {{"metadata", {{"name", "gpu-0"}}}});
  auto requests = seen();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].method, "POST");
  EXPECT_EQ(requests[0].path,
            "/apis/extendedresource.io/v1alpha1/namespaces/team/extendedresourceclaims");
  EXPECT_EQ(json::parse(requests[0].body), claim);
  EXPECT_EQ(requests[0].header("Content-Type"), "application/json");
  EXPECT_EQ(requests[0].param("fieldManager"), "kube-extended-resource");
  EXPECT_EQ(requests[1].method, "PUT");
  EXPECT_EQ(requests[1].path,
            "/apis/extendedresource.io/v1alpha1/namespaces/team/extendedresourceclaims/c1");
  EXPECT_EQ(requests[2].path, "/apis/extendedresource.io/v1alpha1/extendedresources/gpu-0/status");
  EXPECT_EQ(requests[2].param("fieldManager"), "kube-extended-resource");
}

TEST_F(KubeClientTest, UpdateWithoutANameIsRefusedLocally) {
  KubeClient& kube = client();
  EXPECT_EQ(apiErrorOf([&] { kube.update(resources::kPods, "ns", json::object()); }).kind(),
            ApiErrorKind::kBadRequest);
  EXPECT_EQ(apiErrorOf([&] { kube.get(resources::kPods, "ns", ""); }).kind(),
            ApiErrorKind::kBadRequest);
  EXPECT_TRUE(seen().empty());
}

TEST_F(KubeClientTest, PatchContentTypes) {
  server_->Patch(".*", reply(200, "{}"));
  KubeClient& kube = client();
  kube.patch(resources::kPods, "ns", "p", PatchType::kMerge, {{"metadata", {{"labels", {}}}}});
  kube.patch(resources::kPods, "ns", "p", PatchType::kJson,
             json::array({{{"op", "remove"}, {"path", "/metadata/labels/a"}}}));
  kube.patch(resources::kExtendedResources, "", "gpu-0", PatchType::kStrategicMerge,
             {{"status", {{"phase", "Bound"}}}}, "status");
  auto requests = seen();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].header("Content-Type"), "application/merge-patch+json");
  EXPECT_EQ(requests[1].header("Content-Type"), "application/json-patch+json");
  EXPECT_EQ(json::parse(requests[1].body)[0]["op"], "remove");
  EXPECT_EQ(requests[2].header("Content-Type"), "application/strategic-merge-patch+json");
  EXPECT_EQ(requests[2].path, "/apis/extendedresource.io/v1alpha1/extendedresources/gpu-0/status");
  for (const Seen& req : requests) {
    EXPECT_EQ(req.method, "PATCH");
    EXPECT_EQ(req.param("fieldManager"), "kube-extended-resource");
  }
}

TEST_F(KubeClientTest, DeleteSendsPreconditionsAndGracePeriod) {
  server_->Delete(".*", reply(200, R"({"kind":"Status","status":"Success"})"));
  KubeClient& kube = client();
  DeleteOptions opts;
  opts.preconditionUid = "uid-1";
  opts.preconditionResourceVersion = "77";
  opts.gracePeriodSeconds = 0;
  kube.remove(resources::kPods, "ns", "p", opts);
  kube.remove(resources::kNodes, "", "n");
  auto requests = seen();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].path, "/api/v1/namespaces/ns/pods/p");
  EXPECT_EQ(requests[0].header("Content-Type"), "application/json");
  EXPECT_EQ(json::parse(requests[0].body), json::parse(R"({"apiVersion":"v1","kind":"DeleteOptions",
                            "preconditions":{"uid":"uid-1","resourceVersion":"77"},
                            "gracePeriodSeconds":0})"));
  EXPECT_EQ(json::parse(requests[1].body),
            json::parse(R"({"apiVersion":"v1","kind":"DeleteOptions"})"));
}

TEST_F(KubeClientTest, BindPodPostsABinding) {
  server_->Post(".*", reply(201, R"({"kind":"Status","status":"Success","code":201})"));
  client().bindPod("ns", "p1", "uid-1", "node-a", {{"extendedresource.io/allocation", "{}"}});
  auto requests = seen();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].path, "/api/v1/namespaces/ns/pods/p1/binding");
  EXPECT_EQ(json::parse(requests[0].body), json::parse(R"({
    "apiVersion": "v1", "kind": "Binding",
    "metadata": {"name": "p1", "namespace": "ns", "uid": "uid-1",
                 "annotations": {"extendedresource.io/allocation": "{}"}},
    "target": {"apiVersion": "v1", "kind": "Node", "name": "node-a"}})"));
}

TEST_F(KubeClientTest, BindPodConflictIsTyped) {
  server_->Post(".*", reply(409, statusJson(409, "Conflict", "pod p1 is already assigned")));
  ApiError e = apiErrorOf([&] { client().bindPod("ns", "p1", "", "node-a"); });
  EXPECT_TRUE(e.isConflict());
  EXPECT_EQ(seen().size(), 1u);
  EXPECT_FALSE(json::parse(seen()[0].body)["metadata"].contains("uid"));
}

TEST_F(KubeClientTest, ConnectionsAreReused) {
  server_->Get(".*", reply(200, "{}"));
  server_->Post(".*", reply(201, "{}"));
  KubeClient& kube = client();
  for (int i = 0; i < 5; ++i) {
    kube.get(resources::kNodes, "", "n");
    kube.create(resources::kEvents, "ns", json::object());
  }
  std::set<int> ports;
  for (const Seen& req : seen()) {
    ports.insert(req.remotePort);
  }
  EXPECT_EQ(ports.size(), 1u);
}

TEST_F(KubeClientTest, ConcurrentCallsShareAPoolOfConnections) {
  server_->Get(".*", reply(200, R"({"ok":true})"));
  KubeClient& kube = client();
  constexpr int kThreads = 4;
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        ok += kube.get(resources::kNodes, "", "n")["ok"] == true;
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(ok, kThreads * 20);
  std::set<int> ports;
  for (const Seen& req : seen()) {
    ports.insert(req.remotePort);
  }
  EXPECT_LE(ports.size(), static_cast<size_t>(kThreads));
}

// --- failures below HTTP: a hand-rolled server that reads requests and hangs up ---

// Accepts connections and reads whole requests. GETs are answered (keep-alive) when
// answerGets; everything else gets the connection closed without a response: a server that
// died after the request reached it.
class HangUpServer {
 public:
  explicit HangUpServer(bool answerGets) : answerGets_(answerGets) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw std::runtime_error("cannot listen");
    }
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~HangUpServer() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int hungUp() const { return hungUp_; }

 private:
  void run() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) {
        continue;
      }
      int conn = accept(fd_, nullptr, nullptr);
      if (conn >= 0) {
        serve(conn);
        close(conn);
      }
    }
  }

  void serve(int conn) {
    std::string data;
    while (!stop_) {
      size_t headEnd = data.find("\r\n\r\n");
      if (headEnd != std::string::npos) {
        size_t length = 0;
        size_t at = data.find("Content-Length: ");
        if (at != std::string::npos && at < headEnd) {
          length = std::stoul(data.substr(at + 16));
        }
        if (data.size() >= headEnd + 4 + length) {
          if (!answerGets_ || data.rfind("GET ", 0) != 0) {
            ++hungUp_;
            return;
          }
          const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
          send(conn, ok.data(), ok.size(), MSG_NOSIGNAL);
          data.erase(0, headEnd + 4 + length);
          continue;
        }
      }
      pollfd p{conn, POLLIN, 0};
      if (poll(&p, 1, 20) <= 0) {
        continue;
      }
      char buffer[4096];
      ssize_t n = recv(conn, buffer, sizeof buffer, 0);
      if (n <= 0) {
        return;
      }
      data.append(buffer, static_cast<size_t>(n));
    }
  }

  bool answerGets_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> hungUp_{0};
  std::thread thread_;
};

KubeConfig configFor(const std::string& url) {
  KubeConfig config;
  config.server = url;
  return config;
}

TEST(KubeClientFailureTest, WriteIsNotResentAfterTheServerHungUp) {
  HangUpServer server(/*answerGets=*/false);
  KubeClient kube(configFor(server.url()), fastOptions());
  ApiError e = apiErrorOf([&] { kube.create(resources::kPods, "ns", json::object()); });
  EXPECT_EQ(e.kind(), ApiErrorKind::kTransport) << e.what();
  EXPECT_EQ(server.hungUp(), 1);
}

TEST(KubeClientFailureTest, WriteOnAReusedConnectionIsNotResentAfterTheServerHungUp) {
  // libcurl's own resend of requests whose reused connection died must not apply to writes.
  HangUpServer server(/*answerGets=*/true);
  KubeClient kube(configFor(server.url()), fastOptions());
  kube.get(resources::kNodes, "", "n");
  for (auto write : std::vector<std::function<void()>>{
           [&] { kube.create(resources::kPods, "ns", json::object()); },
           [&] { kube.remove(resources::kPods, "ns", "p"); },
           [&] { kube.bindPod("ns", "p", "", "n"); },
       }) {
    kube.get(resources::kNodes, "", "n");  // leaves a live connection to reuse
    int before = server.hungUp();
    EXPECT_EQ(apiErrorOf(write).kind(), ApiErrorKind::kTransport);
    EXPECT_EQ(server.hungUp(), before + 1);
  }
}

TEST(KubeClientFailureTest, ReadIsRetriedAfterTheServerHungUp) {
  HangUpServer server(/*answerGets=*/false);
  KubeClientOptions opts = fastOptions();
  opts.maxRetries = 2;
  KubeClient kube(configFor(server.url()), opts);
  EXPECT_EQ(apiErrorOf([&] { kube.get(resources::kNodes, "", "n"); }).kind(),
            ApiErrorKind::kTransport);
  EXPECT_EQ(server.hungUp(), 3);
}

// A bound socket that does not listen: connections to its port are refused.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), len);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~RefusingPort() { close(fd_); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_;
  int port_;
};

TEST(KubeClientFailureTest, WriteIsRetriedWhenTheConnectionIsRefused) {
  RefusingPort port;
  KubeClientOptions opts = fastOptions();
  opts.retryBaseDelay = 100ms;
  opts.maxRetries = 3;
  KubeClient kube(configFor(port.url()), opts);
  auto start = Clock::now();
  ApiError e = apiErrorOf([&] { kube.create(resources::kPods, "ns", json::object()); });
  EXPECT_EQ(e.kind(), ApiErrorKind::kTransport);
  // Three backoffs of at least 50, 100 and 200 ms prove three retries.
  EXPECT_GE(Clock::now() - start, 350ms);
  EXPECT_NE(std::string(e.what()).find(port.url()), std::string::npos) << e.what();
}

// --- watch ---

std::string watchLine(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump() + "\n";
}

json podNamed(const std::string& name, const std::string& rv) {
  return {{"kind", "Pod"}, {"metadata", {{"name", name}, {"resourceVersion", rv}}}};
}

// Streams `body` in pieces of `chunk` bytes, then ends the response; holds the response open
// instead when hold is set (until the test ends).
httplib::Server::Handler streamed(std::string body, size_t chunk, std::atomic<bool>& release,
                                  bool hold = false) {
  return [=, &release](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider(
        "application/json", [=, &release](size_t, httplib::DataSink& sink) {
          for (size_t at = 0; at < body.size(); at += chunk) {
            if (!sink.write(body.data() + at, std::min(chunk, body.size() - at))) {
              return false;
            }
          }
          while (hold && !release) {
            std::this_thread::sleep_for(5ms);
          }
          sink.done();
          return true;
        });
  };
}

TEST_F(KubeClientTest, WatchStreamsEventsInOddSizedChunks) {
  std::string body =
      watchLine("ADDED", podNamed("a", "1")) + watchLine("MODIFIED", podNamed("a-ü", "2")) +
      watchLine("BOOKMARK", podNamed("", "3")) + watchLine("DELETED", podNamed("a", "4")) +
      watchLine("ERROR", json::parse(statusJson(500, "InternalError", "hiccup")));
  auto handler = streamed(body, 7, release_);
  server_->Get("/api/v1/namespaces/ns/pods",
               [&, handler](const httplib::Request& req, httplib::Response& res) {
                 record(req);
                 handler(req, res);
               });
  std::vector<WatchEvent> events;
  WatchOptions opts;
  opts.resourceVersion = "1";
  opts.timeoutSeconds = 30;
  opts.labelSelector = "app=x";
  client().watch(
      resources::kPods, "ns", opts,
      [&](const WatchEvent& e) {
        events.push_back(e);
        return true;
      },
      nullptr);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[0].type, WatchEventType::kAdded);
  EXPECT_EQ(events[1].object["metadata"]["name"], "a-ü");
  EXPECT_EQ(events[2].type, WatchEventType::kBookmark);
  EXPECT_EQ(events[2].object["metadata"]["resourceVersion"], "3");
  EXPECT_EQ(events[3].type, WatchEventType::kDeleted);
  EXPECT_EQ(events[4].type, WatchEventType::kError);  // not a 410: delivered
  EXPECT_EQ(events[4].object["code"], 500);
  Seen req = seen().at(0);
  EXPECT_EQ(req.param("watch"), "true");
  EXPECT_EQ(req.param("allowWatchBookmarks"), "true");
  EXPECT_EQ(req.param("resourceVersion"), "1");
  EXPECT_EQ(req.param("timeoutSeconds"), "30");
  EXPECT_EQ(req.param("labelSelector"), "app=x");
  EXPECT_EQ(req.header("Authorization"), "Bearer secret-token");
}

TEST_F(KubeClientTest, WatchGoneEventThrows) {
  std::string body = watchLine("ADDED", podNamed("a", "1")) +
                     watchLine("ERROR", json::parse(statusJson(410, "Expired", "too old"))) +
                     watchLine("ADDED", podNamed("b", "2"));
  server_->Get("/api/v1/pods", streamed(body, 5, release_));
  int delivered = 0;
  ApiError e = apiErrorOf([&] {
    client().watch(
        resources::kPods, "", {},
        [&](const WatchEvent&) {
          ++delivered;
          return true;
        },
        nullptr);
  });
  EXPECT_TRUE(e.isGone()) << e.what();
  EXPECT_EQ(e.reason(), "Expired");
  EXPECT_EQ(delivered, 1);
}

TEST_F(KubeClientTest, WatchErrorStatusThrowsTypedError) {
  server_->Get("/api/v1/pods", reply(410, statusJson(410, "Gone", "rv too old")));
  server_->Get("/api/v1/nodes", reply(403, statusJson(403, "Forbidden", "nope")));
  KubeClient& kube = client();
  auto never = [](const WatchEvent&) {
    ADD_FAILURE() << "no event expected";
    return true;
  };
  EXPECT_TRUE(apiErrorOf([&] { kube.watch(resources::kPods, "", {}, never, nullptr); }).isGone());
  ApiError e = apiErrorOf([&] { kube.watch(resources::kNodes, "", {}, never, nullptr); });
  EXPECT_EQ(e.kind(), ApiErrorKind::kForbidden);
  EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos);
}

TEST_F(KubeClientTest, WatchStopFlagEndsTheCallPromptly) {
  server_->Get("/api/v1/pods",
               streamed(watchLine("ADDED", podNamed("a", "1")), 1000, release_, /*hold=*/true));
  KubeClient& kube = client();
  std::atomic<bool> stop{false};
  std::atomic<bool> gotEvent{false};
  std::atomic<bool> returned{false};
  std::thread watcher([&] {
    kube.watch(
        resources::kPods, "", {},
        [&](const WatchEvent&) {
          gotEvent = true;
          return true;
        },
        &stop);
    returned = true;
  });
  while (!gotEvent) {
    std::this_thread::sleep_for(1ms);
  }
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(returned);  // the server holds the stream open
  auto stopAt = Clock::now();
  stop = true;
  watcher.join();
  EXPECT_LT(Clock::now() - stopAt, 300ms);
}

TEST_F(KubeClientTest, WatchEndsWhenTheCallbackSaysSo) {
  std::string body =
      watchLine("ADDED", podNamed("a", "1")) + watchLine("ADDED", podNamed("b", "2"));
  server_->Get("/api/v1/pods", streamed(body, 1000, release_, /*hold=*/true));
  int delivered = 0;
  client().watch(
      resources::kPods, "", {},
      [&](const WatchEvent&) {
        ++delivered;
        return false;
      },
      nullptr);
  EXPECT_EQ(delivered, 1);
}

TEST_F(KubeClientTest, WatchCallbackExceptionsPropagate) {
  server_->Get("/api/v1/pods",
               streamed(watchLine("ADDED", podNamed("a", "1")), 3, release_, /*hold=*/true));
  EXPECT_THROW(
      client().watch(
          resources::kPods, "", {},
          [](const WatchEvent&) -> bool { throw std::logic_error("handler bug"); }, nullptr),
      std::logic_error);
}

TEST_F(KubeClientTest, WatchMalformedStreamIsATransportError) {
  server_->Get("/api/v1/pods",
               streamed("{\"type\":\"ADDED\",\"object\":{}}\nnot json\n", 4, release_));
  int delivered = 0;
  ApiError e = apiErrorOf([&] {
    client().watch(
        resources::kPods, "", {},
        [&](const WatchEvent&) {
          ++delivered;
          return true;
        },
        nullptr);
  });
  EXPECT_EQ(e.kind(), ApiErrorKind::kTransport);
  EXPECT_NE(std::string(e.what()).find("malformed watch event"), std::string::npos) << e.what();
  EXPECT_EQ(delivered, 1);
}

// A quiet watch is no failure: the caller resumes from where it was, without backing off.
TEST_F(KubeClientTest, AWatchSilentPastTheIdleTimeoutEndsCleanly) {
  server_->Get("/api/v1/pods", streamed("", 1, release_, /*hold=*/true));
  KubeClientOptions opts = fastOptions();
  opts.watchIdleTimeout = 1s;
  EXPECT_NO_THROW(client(opts).watch(
      resources::kPods, "", {}, [](const WatchEvent&) { return true; }, nullptr));
}

TEST_F(KubeClientTest, AWatchTheServerNeverAnswersTimesOut) {
  server_->Get("/api/v1/pods", [&](const httplib::Request&, httplib::Response& res) {
    for (int i = 0; i < 500 && !release_; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    res.set_content("", "application/json");
  });
  KubeClientOptions opts = fastOptions();
  opts.watchIdleTimeout = 1s;
  ApiError e = apiErrorOf([&] {
    client(opts).watch(
        resources::kPods, "", {}, [](const WatchEvent&) { return true; }, nullptr);
  });
  EXPECT_EQ(e.kind(), ApiErrorKind::kTimeout) << e.what();
}

// --- TLS ---

struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CertFree {
  void operator()(X509* cert) const { X509_free(cert); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using Cert = std::unique_ptr<X509, CertFree>;

Key newKey() {
  return Key(EVP_EC_gen("P-256"));
}

// Issued by (issuer, issuerKey), or self-signed when issuer is null.
Cert newCert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuerKey,
             const std::vector<std::pair<int, std::string>>& extensions) {
  static std::atomic<long> serial{1};
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 24 * 3600);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer ? issuer : cert.get(), cert.get(), nullptr, nullptr, 0);
  for (const auto& [nid, value] : extensions) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
    X509_add_ext(cert.get(), ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(cert.get(), issuerKey ? issuerKey : key, EVP_sha256());
  return cert;
}

template <typename Write>
std::string toPem(Write write) {
  BIO* bio = BIO_new(BIO_s_mem());
  write(bio);
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(size));
  BIO_free(bio);
  return pem;
}
std::string pem(X509* cert) {
  return toPem([&](BIO* bio) { PEM_write_bio_X509(bio, cert); });
}
std::string pem(EVP_PKEY* key) {
  return toPem(
      [&](BIO* bio) { PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr); });
}

// A CA; a server certificate for the name kube.test only (not 127.0.0.1), and a client
// certificate the server requires.
struct Pki {
  Key caKey = newKey();
  Cert ca = newCert(caKey.get(), "test-ca", nullptr, nullptr,
                    {{NID_basic_constraints, "critical,CA:TRUE"},
                     {NID_key_usage, "critical,keyCertSign,cRLSign"}});
  Key serverKey = newKey();
  Cert server =
      newCert(serverKey.get(), "kube-apiserver", ca.get(), caKey.get(),
              {{NID_subject_alt_name, "DNS:kube.test"}, {NID_ext_key_usage, "serverAuth"}});
  Key clientKey = newKey();
  Cert client = newCert(clientKey.get(), "controller", ca.get(), caKey.get(),
                        {{NID_ext_key_usage, "clientAuth"}});
};

const Pki& pki() {
  static const Pki instance;
  return instance;
}

class KubeClientTlsTest : public KubeClientTest {
 protected:
  std::unique_ptr<httplib::Server> makeServer() override {
    X509_STORE* clientCas = X509_STORE_new();  // owned by the server
    X509_STORE_add_cert(clientCas, pki().ca.get());
    return std::make_unique<httplib::SSLServer>(pki().server.get(), pki().serverKey.get(),
                                                clientCas);
  }
  std::string scheme() const override { return "https"; }

  KubeConfig tlsConfig() const {
    KubeConfig config = this->config();
    config.caData = pem(pki().ca.get());
    config.clientCertData = pem(pki().client.get());
    config.clientKeyData = pem(pki().clientKey.get());
    config.tlsServerName = "kube.test";
    return config;
  }

  KubeClientOptions noRetries() const {
    KubeClientOptions opts = fastOptions();
    opts.maxRetries = 0;
    return opts;
  }
};

TEST_F(KubeClientTlsTest, CaAndClientCertificateFromMemory) {
  server_->Get("/api/v1/nodes/n", reply(200, R"({"metadata":{"name":"n"}})"));
  KubeClient& kube = client(tlsConfig());
  EXPECT_EQ(kube.get(resources::kNodes, "", "n")["metadata"]["name"], "n");
  kube.get(resources::kNodes, "", "n");
  auto requests = seen();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].remotePort, requests[1].remotePort);  // TLS connections are kept too
}

TEST_F(KubeClientTlsTest, ServerNameMismatchWithoutTlsServerNameFails) {
  server_->Get("/api/v1/nodes/n", reply(200, "{}"));
  KubeConfig config = tlsConfig();
  config.tlsServerName.clear();  // the certificate is for kube.test, not 127.0.0.1
  EXPECT_EQ(apiErrorOf([&] { client(config, noRetries()).get(resources::kNodes, "", "n"); }).kind(),
            ApiErrorKind::kTransport);
  EXPECT_TRUE(seen().empty());
}

TEST_F(KubeClientTlsTest, UnknownCaFails) {
  server_->Get("/api/v1/nodes/n", reply(200, "{}"));
  Key otherKey = newKey();
  Cert otherCa = newCert(otherKey.get(), "other-ca", nullptr, nullptr,
                         {{NID_basic_constraints, "critical,CA:TRUE"}});
  KubeConfig config = tlsConfig();
  config.caData = pem(otherCa.get());
  EXPECT_EQ(apiErrorOf([&] { client(config, noRetries()).get(resources::kNodes, "", "n"); }).kind(),
            ApiErrorKind::kTransport);
  EXPECT_TRUE(seen().empty());
}

TEST_F(KubeClientTlsTest, InsecureSkipsVerification) {
  server_->Get("/api/v1/nodes/n", reply(200, "{}"));
  KubeConfig config = tlsConfig();
  config.caData.clear();
  config.tlsServerName.clear();
  config.insecureSkipTlsVerify = true;
  client(config).get(resources::kNodes, "", "n");
  EXPECT_EQ(seen().size(), 1u);
}

TEST_F(KubeClientTlsTest, MissingClientCertificateIsRejectedByTheServer) {
  server_->Get("/api/v1/nodes/n", reply(200, "{}"));
  KubeConfig config = tlsConfig();
  config.clientCertData.clear();
  config.clientKeyData.clear();
  EXPECT_EQ(apiErrorOf([&] { client(config, noRetries()).get(resources::kNodes, "", "n"); }).kind(),
            ApiErrorKind::kTransport);
  EXPECT_TRUE(seen().empty());
}

}  // namespace
}  // namespace ker
