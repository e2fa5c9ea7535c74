#include <gtest/gtest.h>
#include <cstdio>
#include "nats/subjects.h"
namespace mcpfan::detail::nats {
namespace {
TEST(Scratch, Print) {
  std::string o;
  for (const char* s : {"", "file:", "proj", "a b.txt", "urn:a..b", "a", "foobar"}) {
    o.clear(); append_hash_token(o, HashDomain::Segment, s);
    std::printf("H(0,%s)=%s fnv=%016llx\n", s, o.c_str(), (unsigned long long)fnv1a64(s));
  }
  std::printf("%s\n%s\n", resource_subject("mcpfan","default","file:///proj/a b.txt").c_str(), resource_interest("mcpfan","default","file:///proj/").c_str());
  std::printf("%s\n", resource_subject("mcpfan","default","a/b/c/d/e/f/g/h/i/j/k/l/m").c_str());
}
}
}
