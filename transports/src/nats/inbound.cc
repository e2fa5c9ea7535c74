#include "nats/inbound.h"

#include <string>

#include "nats/subjects.h"

namespace mcpfan::detail::nats {

std::string_view reject_name(Reject r) noexcept {
  switch (r) {
    case Reject::Malformed: return "malformed";
    case Reject::Batch: return "batch";
    case Reject::Tenant: return "tenant";
    case Reject::Subject: return "subject";
    case Reject::ReceiveBudget: return "receive_budget";
    case Reject::InboxFull: return "inbox_full";
    case Reject::Own: return "own";
  }
  return "unknown";
}

namespace {
Inbound reject(Reject r) { return Inbound{r, {}, {}}; }

bool starts_array(std::string_view body) {
  for (char c : body) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '[';
  }
  return false;
}
}  // namespace

Inbound check_inbound(PublishDecoder& decoder, std::string_view prefix, std::string_view subject, std::string_view body,
                      const TenantTable& tenants) {
  // <prefix>.v1.<tenant token>.(r|l).…
  if (subject.size() <= prefix.size() + kVersionToken.size() + 2 || subject.substr(0, prefix.size()) != prefix ||
      subject[prefix.size()] != '.' || subject.substr(prefix.size() + 1, kVersionToken.size()) != kVersionToken ||
      subject[prefix.size() + 1 + kVersionToken.size()] != '.') {
    return reject(Reject::Malformed);
  }
  const std::size_t token_at = prefix.size() + kVersionToken.size() + 2;
  const std::size_t token_end = subject.find('.', token_at);
  if (token_end == std::string_view::npos) return reject(Reject::Malformed);
  const std::string_view rest = subject.substr(token_end + 1);
  if (rest.size() < 3 || (rest.substr(0, 2) != "r." && rest.substr(0, 2) != "l." && rest.substr(0, 2) != "t.")) {
    return reject(Reject::Malformed);
  }
  std::optional<TenantTokenName> token = decode_tenant_token(subject.substr(token_at, token_end - token_at));
  // `~e` (the empty name) is a token of the contract, but no publish names an empty tenant.
  if (!token || (!token->hashed && token->name.empty())) return reject(Reject::Malformed);
  // One notification per message: an array is refused before it is decoded, even of one.
  if (starts_array(body)) return reject(Reject::Batch);

  // The subject's tenant is forced: a body naming another is refused by the decoder itself
  // (kForbidden), and a body naming none is the subject's tenant's.
  auto decoded = decoder.decode(body, tenants,
                                token->hashed ? std::nullopt : std::optional<std::string_view>(token->name),
                                /*for_backplane=*/false);
  if (!decoded) return reject(decoded.error().code == rpc_code::kForbidden ? Reject::Tenant : Reject::Malformed);
  if (decoded.value().accepted != 1) return reject(Reject::Malformed);
  DecodedPublish& d = decoded.value();
  // A task's state is kept even where its tenant has no clients yet (a late listener's).
  std::optional<TaskState> task;
  if (!d.tasks.empty()) task = std::move(d.tasks.front());
  PayloadRef payload = d.payloads.empty() ? PayloadRef() : std::move(d.payloads.front());
  const PayloadRef& checked = payload ? payload : task ? task->payload : payload;
  if (!checked) return Inbound{};  // valid, but nobody here is of its tenant

  // The subject this notification would have been sent on must be the one it came on.
  thread_local std::string expected;
  expected.clear();
  expected.reserve(kMaxSubjectBytes);
  const std::string hashed_name =
      !token->hashed ? std::string() : task ? task->tenant : tenants.name(payload->tenant());
  const std::string& name = token->hashed ? hashed_name : token->name;
  append_subject(expected, prefix, name, checked->kind(), checked->uri());
  if (expected.compare(0, token_end + 1, subject.substr(0, token_end + 1)) != 0) return reject(Reject::Tenant);
  if (expected != subject) return reject(Reject::Subject);
  return Inbound{std::nullopt, std::move(payload), std::move(task)};
}

}  // namespace mcpfan::detail::nats
