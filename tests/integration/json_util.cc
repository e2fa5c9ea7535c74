#include "json_util.h"

#include <map>

namespace itest {

using simdjson::dom::element;
using simdjson::dom::element_type;

Json::Json(std::string_view text) : text_(text), parser_(std::make_shared<simdjson::dom::parser>()) {
  auto err = parser_->parse(text_.data(), text_.size()).get(root_);
  ok_ = !err;
  error_ = ok_ ? "" : std::string(simdjson::error_message(err));
}

std::optional<element> Child(element e, std::string_view key) {
  simdjson::dom::object obj;
  if (e.get_object().get(obj)) return std::nullopt;
  element v;
  if (obj.at_key(key).get(v)) return std::nullopt;
  return v;
}

std::optional<element> Json::Get(std::initializer_list<std::string_view> path) const {
  if (!ok_) return std::nullopt;
  element cur = root_;
  for (std::string_view key : path) {
    auto next = Child(cur, key);
    if (!next) return std::nullopt;
    cur = *next;
  }
  return cur;
}

std::optional<std::string> Json::GetString(std::initializer_list<std::string_view> path) const {
  auto e = Get(path);
  std::string_view s;
  if (!e || e->get_string().get(s)) return std::nullopt;
  return std::string(s);
}

std::optional<int64_t> Json::GetInt(std::initializer_list<std::string_view> path) const {
  auto e = Get(path);
  int64_t v = 0;
  if (!e || e->get_int64().get(v)) return std::nullopt;
  return v;
}

std::string Dump(element e) { return simdjson::minify(e); }

namespace {
bool IsInteger(element_type t) { return t == element_type::INT64 || t == element_type::UINT64; }
}  // namespace

bool JsonEqual(element a, element b) {
  element_type ta = a.type(), tb = b.type();
  if (IsInteger(ta) && IsInteger(tb)) {
    if (ta == tb) {
      return ta == element_type::INT64 ? int64_t(a) == int64_t(b) : uint64_t(a) == uint64_t(b);
    }
    // Mixed: only equal when both are non-negative and the same value.
    int64_t s = ta == element_type::INT64 ? int64_t(a) : int64_t(b);
    uint64_t u = ta == element_type::UINT64 ? uint64_t(a) : uint64_t(b);
    return s >= 0 && uint64_t(s) == u;
  }
  if (ta != tb) return false;
  switch (ta) {
    case element_type::NULL_VALUE:
      return true;
    case element_type::BOOL:
      return bool(a) == bool(b);
    case element_type::DOUBLE:
      return double(a) == double(b);
    case element_type::STRING:
      return std::string_view(a) == std::string_view(b);
    case element_type::ARRAY: {
      simdjson::dom::array xa = a, xb = b;
      if (xa.size() != xb.size()) return false;
      auto ib = xb.begin();
      for (element ea : xa) {
        if (!JsonEqual(ea, *ib)) return false;
        ++ib;
      }
      return true;
    }
    case element_type::OBJECT: {
      simdjson::dom::object oa = a, ob = b;
      std::map<std::string_view, element> ma, mb;
      for (auto f : oa) {
        if (!ma.emplace(f.key, f.value).second) return false;  // duplicate key
      }
      for (auto f : ob) {
        if (!mb.emplace(f.key, f.value).second) return false;
      }
      if (ma.size() != mb.size()) return false;
      for (auto& [k, v] : ma) {
        auto it = mb.find(k);
        if (it == mb.end() || !JsonEqual(v, it->second)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

::testing::AssertionResult JsonMatches(element actual, std::string_view expected) {
  Json want(expected);
  if (!want.ok()) {
    return ::testing::AssertionFailure() << "test bug: expected JSON does not parse: " << expected;
  }
  if (JsonEqual(actual, want.root())) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "JSON differs\n  expected: " << Dump(want.root())
                                       << "\n  actual:   " << Dump(actual);
}

::testing::AssertionResult JsonMatches(const std::optional<element>& actual,
                                       std::string_view expected) {
  if (!actual) return ::testing::AssertionFailure() << "JSON value missing, expected " << expected;
  return JsonMatches(*actual, expected);
}

}  // namespace itest
