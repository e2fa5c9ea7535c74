// Tests for engine/src/payload.cc: encode-once notifications split around the subscriptionId.
#include "mcpfan/payload.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <thread>
#include <vector>

#include "alloc_probe.h"
#include "test_sink.h"

namespace mcpfan {
namespace {

// head + id + tail: one complete frame for one subscription.
std::string assemble(const Payload& p, Framing f, std::string_view id) {
  std::string s(p.head(f));
  s += id;
  s += p.tail(f);
  return s;
}

// The JSON text of a frame, after checking the framing around it.
std::string json_of(const std::string& frame, Framing f) {
  if (f == Framing::Sse) {
    constexpr std::string_view kPrefix = "event: message\ndata: ";
    EXPECT_EQ(frame.substr(0, kPrefix.size()), kPrefix);
    EXPECT_GE(frame.size(), kPrefix.size() + 2);
    EXPECT_EQ(frame.substr(frame.size() - 2), "\n\n");
    return frame.substr(kPrefix.size(), frame.size() - kPrefix.size() - 2);
  }
  EXPECT_EQ(frame.back(), '\n');
  return frame.substr(0, frame.size() - 1);
}

// A publisher's notification with keys that need escaping, raw values of every type,
// and _meta members of its own.
struct Sample {
  std::string uri = "file:///dir/a \"quoted\" name.txt";
  std::string raw_uri = test::quoted(uri);
  NotificationParts parts;
  Sample() {
    parts.tenant = TenantId{3, 5};
    parts.kind = Kind::ResourceUpdated;
    parts.uri = uri;
    parts.params = {{"uri", raw_uri},
                    {"rev", "42"},
                    {"obj", R"({"x":[1,2.5,null],"y":"line\nbreak"})"},
                    {"we\"ird\nkey\\", "true"},
                    {"tab\tkey", R"("caf\u00e9 ☕")"}};
    parts.meta = {{"origin/rev", "7"}, {"q\"uote", R"({"deep":[true]})"}};
  }
};

class PayloadRoundTrip : public ::testing::TestWithParam<std::tuple<Framing, std::string>> {};

TEST_P(PayloadRoundTrip, ParsesBackWithEveryMemberInPlace) {
  const auto& [framing, id] = GetParam();
  Sample s;
  PayloadRef p = encode_notification(s.parts);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->kind(), Kind::ResourceUpdated);
  EXPECT_EQ(p->tenant(), (TenantId{3, 5}));
  EXPECT_EQ(p->uri(), s.uri);

  std::string frame = assemble(*p, framing, id);
  EXPECT_EQ(p->frame_size(framing) + id.size(), frame.size());
  std::string json = json_of(frame, framing);
  EXPECT_EQ(json.find('\n'), std::string::npos) << "raw newline inside the JSON: " << json;
  EXPECT_EQ(json.find('\r'), std::string::npos);

  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  ASSERT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  EXPECT_EQ(doc["jsonrpc"].get_string().value(), "2.0");
  EXPECT_EQ(doc["method"].get_string().value(), "notifications/resources/updated");
  simdjson::dom::object params = doc["params"].get_object().value();

  // Subscription id with its JSON type kept, publisher _meta members next to it.
  simdjson::dom::object meta = params["_meta"].get_object().value();
  simdjson::dom::element sid = meta["io.modelcontextprotocol/subscriptionId"].value();
  if (id.front() == '"') {
    EXPECT_EQ(sid.get_string().value(), id.substr(1, id.size() - 2));
  } else {
    EXPECT_EQ(sid.get_int64().value(), std::stoll(id));
  }
  EXPECT_EQ(meta["origin/rev"].get_int64().value(), 7);
  EXPECT_EQ(meta["q\"uote"]["deep"].at(0).get_bool().value(), true);
  EXPECT_EQ(meta.size(), 3u);

  // Other params members, verbatim.
  EXPECT_EQ(params["uri"].get_string().value(), s.uri);
  EXPECT_EQ(params["rev"].get_int64().value(), 42);
  EXPECT_EQ(params["obj"]["y"].get_string().value(), "line\nbreak");
  EXPECT_EQ(params["obj"]["x"].at(1).get_double().value(), 2.5);
  EXPECT_EQ(params["we\"ird\nkey\\"].get_bool().value(), true);
  EXPECT_EQ(params["tab\tkey"].get_string().value(), "café ☕");
  EXPECT_EQ(params.size(), 6u);  // _meta + 5
  EXPECT_NE(json.find(R"("obj":{"x":[1,2.5,null],"y":"line\nbreak"})"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("rev":42)"), std::string::npos) << json;
}

INSTANTIATE_TEST_SUITE_P(Framings, PayloadRoundTrip,
                         ::testing::Combine(::testing::Values(Framing::Sse, Framing::Line),
                                            ::testing::Values(std::string(R"("listen:0")"), std::string("17"))));

TEST(Payload, ListChangedLayoutIsExact) {
  PayloadRef p = test::make_list_changed(Kind::PromptsListChanged);
  EXPECT_EQ(assemble(*p, Framing::Sse, R"("a")"),
            "event: message\ndata: "
            R"({"jsonrpc":"2.0","method":"notifications/prompts/list_changed",)"
            R"("params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"a"}}})"
            "\n\n");
  EXPECT_EQ(assemble(*p, Framing::Line, "5"),
            R"({"jsonrpc":"2.0","method":"notifications/prompts/list_changed",)"
            R"("params":{"_meta":{"io.modelcontextprotocol/subscriptionId":5}}})"
            "\n");
  EXPECT_TRUE(p->uri().empty());
}

TEST(Payload, SseAndLineShareTheSameJson) {
  Sample s;
  PayloadRef p = encode_notification(s.parts);
  EXPECT_EQ(json_of(assemble(*p, Framing::Sse, "1"), Framing::Sse),
            json_of(assemble(*p, Framing::Line, "1"), Framing::Line));
  // Both framings are views of one buffer: the Line head lies inside the Sse head.
  std::string_view sse = p->head(Framing::Sse), line = p->head(Framing::Line);
  EXPECT_EQ(sse.data() + (sse.size() - line.size()), line.data());
  EXPECT_EQ(p->frame_size(Framing::Sse),
            p->frame_size(Framing::Line) + std::string_view("event: message\ndata: \n").size());
}

// plain(): the notification for subscriptions without an id (2025-era sessions).
TEST(Payload, PlainFrameCarriesParamsAsPublishedWithoutSubscriptionId) {
  Sample s;
  PayloadRef p = encode_notification(s.parts);
  std::string sse(p->plain(Framing::Sse)), line(p->plain(Framing::Line));
  std::string json = json_of(sse, Framing::Sse);
  EXPECT_EQ(json, json_of(line, Framing::Line));
  EXPECT_EQ(json.find('\n'), std::string::npos) << json;
  EXPECT_EQ(json.find("subscriptionId"), std::string::npos) << json;

  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(json).value();
  EXPECT_EQ(doc["jsonrpc"].get_string().value(), "2.0");
  EXPECT_EQ(doc["method"].get_string().value(), "notifications/resources/updated");
  simdjson::dom::object params = doc["params"].get_object().value();
  EXPECT_EQ(params.size(), 6u);
  EXPECT_EQ(params["uri"].get_string().value(), s.uri);
  EXPECT_EQ(params["we\"ird\nkey\\"].get_bool().value(), true);
  simdjson::dom::object meta = params["_meta"].get_object().value();
  EXPECT_EQ(meta.size(), 2u);
  EXPECT_EQ(meta["origin/rev"].get_int64().value(), 7);
  EXPECT_NE(json.find(R"("obj":{"x":[1,2.5,null],"y":"line\nbreak"})"), std::string::npos) << json;
}

TEST(Payload, PlainFrameLayoutIsExact) {
  PayloadRef bare = test::make_list_changed(Kind::ToolsListChanged);
  EXPECT_EQ(bare->plain(Framing::Sse),
            "event: message\ndata: "
            R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}})"
            "\n\n");
  EXPECT_EQ(bare->plain(Framing::Line),
            R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}})"
            "\n");

  NotificationParts parts;
  parts.kind = Kind::ResourcesListChanged;
  parts.meta = {{"a", "1"}, {"b", R"("x")"}};
  PayloadRef meta_only = encode_notification(parts);
  EXPECT_EQ(meta_only->plain(Framing::Line),
            R"({"jsonrpc":"2.0","method":"notifications/resources/list_changed","params":{"_meta":{"a":1,"b":"x"}}})"
            "\n");

  PayloadRef update = test::make_update("file:///u", kDefaultTenant, {{"rev", "2"}});
  EXPECT_EQ(update->plain(Framing::Line),
            R"({"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///u","rev":2}})"
            "\n");
}

TEST(Payload, RefCopiesAndMovesKeepThePayloadUntilTheLastRefGoes) {
  PayloadRef a = test::make_update("file:///lifetime");
  const Payload* raw = a.get();
  alloc_probe::watch(raw);
  {
    PayloadRef b = a;                // copy
    PayloadRef c = std::move(b);     // move: b gives its reference away
    EXPECT_FALSE(b);
    EXPECT_EQ(c.get(), raw);
    a.reset();
    EXPECT_FALSE(a);
    EXPECT_FALSE(alloc_probe::watched_freed()) << "freed while c still refers to it";
    EXPECT_EQ(c->uri(), "file:///lifetime");  // ASan reports a use-after-free here otherwise

    PayloadRef d;
    d = c;  // copy-assign
    PayloadRef& alias = d;
    d = alias;  // self-assign
    c = PayloadRef();  // assigning empty drops c's reference
    EXPECT_FALSE(c);
    EXPECT_FALSE(alloc_probe::watched_freed());
    EXPECT_EQ(d->uri(), "file:///lifetime");

    PayloadRef e;
    e = std::move(d);  // move-assign
    EXPECT_FALSE(d);
    EXPECT_FALSE(alloc_probe::watched_freed());
    EXPECT_EQ(e->kind(), Kind::ResourceUpdated);
  }
  EXPECT_TRUE(alloc_probe::watched_freed()) << "the last reference went, the payload stayed";
}

TEST(Payload, RefsReleasedOnManyThreadsFreeOnce) {
  PayloadRef p = test::make_update("file:///threads");
  alloc_probe::watch(p.get());
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([copy = p]() mutable {
      for (int i = 0; i < 1000; ++i) {
        PayloadRef local = copy;
        ASSERT_EQ(local->uri(), "file:///threads");
      }
      copy.reset();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(alloc_probe::watched_freed());
  p.reset();
  EXPECT_TRUE(alloc_probe::watched_freed());  // a double free would be an ASan report
}

}  // namespace
}  // namespace mcpfan
