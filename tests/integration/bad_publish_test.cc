// Bad bodies to POST /v1/publish: 400 with {"error": "..."} naming the problem,
// and nothing of that body is delivered (design.md 3).
#include <algorithm>
#include <cctype>

#include "harness.h"

namespace itest {
namespace {

constexpr int kMaxBody = 2048;
constexpr int kMaxUri = 128;

class BadPublish : public ::testing::Test {
 protected:
  void SetUp() override {
    srv_ = std::make_unique<ServerProcess>(std::vector<std::string>{
        "--workers", "2", "--max-body", std::to_string(kMaxBody), "--max-uri-length", std::to_string(kMaxUri)});
    ASSERT_TRUE(srv_->ok()) << srv_->error();
    // Subscribed to everything a valid element of the bad bodies would hit.
    ASSERT_TRUE(OpenListen(watch_, port(), R"("watch")",
                           R"({"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,
                               "resourceSubscriptions":["file:///bp/","file:///marker"]})"));
  }
  void TearDown() override {
    if (!srv_ || !srv_->ok() || HasFatalFailure()) return;
    // Nothing from the rejected bodies arrived: the marker is the next event.
    if (PublishOk(port(), R"({"method":"notifications/resources/updated","params":{"uri":"file:///marker"}})")) {
      std::string err;
      auto m = watch_.NextMessage(kIo, &err);
      if (!m) {
        ADD_FAILURE() << "marker not delivered: " << err;
      } else {
        EXPECT_TRUE(IsNotification(*m, "notifications/resources/updated", R"("watch")", R"({"uri":"file:///marker"})"))
            << "something from a rejected publish body was delivered";
      }
    } else {
      ADD_FAILURE() << "marker publish failed";
    }
    EXPECT_TRUE(ServesListenAndPublish(port()));
  }
  int port() const { return srv_->port(); }

  // 400 + {"error": "<message>"} whose message mentions one of `words`.
  void ExpectRejected(std::string_view body, std::vector<std::string_view> words) {
    auto r = Publish(port(), body);
    ASSERT_TRUE(r) << "no reply for " << body;
    EXPECT_EQ(r->status, 400) << r->body << "\n  body: " << body;
    EXPECT_TRUE(r->ContentTypeIs("application/json")) << r->Get("content-type").value_or("<none>");
    Json j(r->body);
    ASSERT_TRUE(j.ok()) << "error reply is not JSON: " << r->body;
    auto msg = j.GetString({"error"});
    ASSERT_TRUE(msg && !msg->empty()) << "want {\"error\": \"...\"}, got " << r->body;
    std::string lower = *msg;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    bool named = std::any_of(words.begin(), words.end(), [&](std::string_view w) {
      std::string lw(w);
      std::transform(lw.begin(), lw.end(), lw.begin(), [](unsigned char c) { return std::tolower(c); });
      return lower.find(lw) != std::string::npos;
    });
    EXPECT_TRUE(named) << "error message does not name the problem: " << *msg << "\n  body: " << body;
  }

  std::unique_ptr<ServerProcess> srv_;
  SseStream watch_;
};

constexpr const char* kValid = R"({"method":"notifications/resources/updated","params":{"uri":"file:///bp/valid"}})";

TEST_F(BadPublish, MalformedJson) {
  ExpectRejected(R"({"method":"notifications/tools/list_changed")", {"json", "parse"});
  ExpectRejected("[" + std::string(kValid) + ",", {"json", "parse"});
}

TEST_F(BadPublish, NotAnObject) {
  ExpectRejected("42", {"object", "notification"});
  ExpectRejected("[" + std::string(kValid) + ",42]", {"object", "notification"});
}

TEST_F(BadPublish, UnknownMethod) {
  ExpectRejected(R"({"method":"notifications/nope"})", {"notifications/nope", "method"});
  ExpectRejected("[" + std::string(kValid) + R"(,{"method":"notifications/nope"}])", {"notifications/nope", "method"});
  ExpectRejected(R"({"params":{"uri":"file:///bp/x"}})", {"method"});
}

TEST_F(BadPublish, MissingUri) {
  ExpectRejected(R"({"method":"notifications/resources/updated","params":{}})", {"uri"});
  ExpectRejected(R"({"method":"notifications/resources/updated"})", {"uri"});
  ExpectRejected("[" + std::string(kValid) + R"(,{"method":"notifications/resources/updated","params":{"uri":7}}])",
                 {"uri"});
  ExpectRejected("[" + std::string(kValid) + R"(,{"method":"notifications/resources/updated","params":{}}])", {"uri"});
}

TEST_F(BadPublish, UriOverMaxLength) {
  std::string longuri = "file:///bp/" + std::string(kMaxUri, 'l');
  ExpectRejected("[" + std::string(kValid) +
                     R"(,{"method":"notifications/resources/updated","params":{"uri":")" + longuri + R"("}}])",
                 {"uri", "length", "long"});
}

TEST_F(BadPublish, BodyOverMaxBodyIs413) {
  std::string body = "[" + std::string(kValid);
  while (body.size() <= size_t(kMaxBody)) body += "," + std::string(kValid);
  body += "]";
  auto r = Publish(port(), body);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413) << r->body;
}

TEST_F(BadPublish, WrongContentTypeIs415) {
  auto r = Roundtrip(port(), BuildRequest("POST", "/v1/publish", {{"Content-Type", "text/plain"}}, kValid));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 415) << r->body;
}

}  // namespace
}  // namespace itest
