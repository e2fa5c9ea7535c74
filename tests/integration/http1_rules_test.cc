// The request rules of RFC 9112 that Debian's non-strict http_parser lets through, enforced
// on every listener (http1/request_parser.h): a field name is a token (no whitespace before the
// colon), no obs-fold, no control bytes in a value, one Host; trailers never become fields.
// Each rule is checked on a plain server (no --upstream): the answer is a 400 naming the
// problem, and the connection closes after it.
#include <fstream>

#include "harness.h"
#include "stdio_client.h"
#include "test_helpers.h"

namespace itest {
namespace {

// Sends raw bytes on a fresh connection; returns the answer (which must close the connection).
HttpResponse SendRaw(int port, std::string_view bytes) {
  Conn c;
  EXPECT_TRUE(c.Connect(port));
  EXPECT_TRUE(c.Send(bytes));
  std::string err;
  auto r = c.ReadResponse(kIo, &err);
  EXPECT_TRUE(r) << err;
  return r.value_or(HttpResponse{});
}

std::string PublishHead(std::string_view extra_fields) {
  return "POST /v1/publish HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
         std::string(extra_fields);
}

const std::string kNote = Updated("file:///r");

TEST(Http1Rules, WhitespaceBeforeTheColonIs400) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  // The smuggling probe's shape: http_parser reads this as Transfer-Encoding.
  HttpResponse r = SendRaw(srv.port(), PublishHead("Transfer-Encoding : chunked\r\n\r\n") + Chunked(kNote, 7));
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("not a token"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("Transfer-Encoding\\\\x20"), std::string::npos)
      << "the name is shown, its space escaped: " << r.body;
  r = SendRaw(srv.port(), PublishHead("Content-Length :" + std::to_string(kNote.size()) + "\r\n\r\n") + kNote);
  EXPECT_EQ(r.status, 400) << r.body;
}

TEST(Http1Rules, FieldNamesThatAreNotTokensAre400) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  for (std::string_view bad : {"X(y): 1\r\n", "X\ty: 1\r\n", "X/y: 1\r\n", "X\"y\": 1\r\n", "X@y: 1\r\n"}) {
    HttpResponse r =
        SendRaw(srv.port(), PublishHead(bad) + "Content-Length: " + std::to_string(kNote.size()) + "\r\n\r\n" + kNote);
    EXPECT_EQ(r.status, 400) << bad << " -> " << r.body;
  }
}

TEST(Http1Rules, ObsFoldIs400) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string req =
      PublishHead("X-A: one\r\n  folded\r\nContent-Length: " + std::to_string(kNote.size()) + "\r\n\r\n") + kNote;
  HttpResponse r = SendRaw(srv.port(), req);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("line folding"), std::string::npos) << r.body;
  // The same bytes one at a time: the rule does not depend on where reads split the head.
  Conn c;
  ASSERT_TRUE(c.Connect(srv.port()));
  ASSERT_TRUE(c.SendBytewise(req, Ms(0)));
  std::string err;
  auto slow = c.ReadResponse(kIo, &err);
  ASSERT_TRUE(slow) << err;
  EXPECT_EQ(slow->status, 400) << slow->body;
  // A tab folds as well as a space.
  r = SendRaw(
      srv.port(),
      PublishHead("X-A: one\r\n\tfolded\r\nContent-Length: " + std::to_string(kNote.size()) + "\r\n\r\n") + kNote);
  EXPECT_EQ(r.status, 400) << r.body;
}

TEST(Http1Rules, ControlBytesInAValueAre400) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  const std::string length = "Content-Length: " + std::to_string(kNote.size()) + "\r\n\r\n";
  for (std::string bad : {std::string("X-A: a\rb\r\n"), std::string("X-A: a\0b\r\n", 10), std::string("X-A: a\x7f\r\n"),
                          std::string("X-A: a\x01\r\n")}) {
    HttpResponse r = SendRaw(srv.port(), PublishHead(bad) + length + kNote);
    EXPECT_EQ(r.status, 400) << r.body;
  }
  // obs-text (bytes 0x80-0xFF) is allowed in a value (RFC 9110 §5.5).
  auto ok = Publish(srv.port(), kNote, {{"X-A", "caf\xc3\xa9"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 202) << ok->body;
}

TEST(Http1Rules, TwoHostFieldsAre400) {
  ServerProcess srv;
  ASSERT_TRUE(srv.ok()) << srv.error();
  HttpResponse r =
      SendRaw(srv.port(),
              "POST /v1/publish HTTP/1.1\r\nHost: a\r\nHost: b\r\nContent-Type: application/json\r\nContent-Length: " +
                  std::to_string(kNote.size()) + "\r\n\r\n" + kNote);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("Host"), std::string::npos) << r.body;
}

// A trailer cannot supply what the head lacked: here, the publisher key. Before the fix a
// chunked body's trailers were parsed as header fields (all but the last one).
TEST(Http1Rules, TrailersNeverBecomeFields) {
  TempDir dir;
  const std::string keys = dir.path() + "/keys";
  std::ofstream(keys) << "pub-key-0123456789abcdef *\n";
  ServerProcess srv({"--publish-keys-file", keys});
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string chunked = Chunked(kNote, 9);
  ASSERT_GE(chunked.size(), 5u);
  chunked.erase(chunked.size() - 2);  // "0\r\n" + trailers + "\r\n"
  chunked += "Authorization: Bearer pub-key-0123456789abcdef\r\nX-Last: 1\r\n\r\n";
  HttpResponse r = SendRaw(srv.port(), PublishHead("Transfer-Encoding: chunked\r\n\r\n") + chunked);
  EXPECT_EQ(r.status, 401) << "a trailer authenticated the publish: " << r.body;
  // The same key in the head is accepted: the key itself is good.
  auto ok = Publish(srv.port(), kNote, {{"Authorization", "Bearer pub-key-0123456789abcdef"}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 202) << ok->body;
}

// Trailers are read and dropped, bounded by the header limit like the head itself.
TEST(Http1Rules, TrailersCountAgainstTheHeaderLimit) {
  ServerProcess srv({"--max-header-bytes", "2048"});
  ASSERT_TRUE(srv.ok()) << srv.error();
  std::string chunked = Chunked(kNote, 64);
  chunked.erase(chunked.size() - 2);
  for (int i = 0; i < 100; ++i) chunked += "X-Trailer-" + std::to_string(i) + ": " + std::string(40, 'v') + "\r\n";
  chunked += "\r\n";
  HttpResponse r = SendRaw(srv.port(), PublishHead("Transfer-Encoding: chunked\r\n\r\n") + chunked);
  EXPECT_EQ(r.status, 431) << r.body;
}

}  // namespace
}  // namespace itest
