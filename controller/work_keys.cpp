#include "controller/work_keys.h"

namespace ker {

namespace {

// One letter per key type, then the name: the letter alone says how to read the rest.
constexpr char kClaim = 'c';
constexpr char kDevice = 'd';
constexpr char kPod = 'p';
constexpr char kResourceNudge = 'r';
constexpr char kClaimNudge = 'n';
constexpr char kResourceFollowUp = 'R';
constexpr char kClaimFollowUp = 'N';
constexpr char kClassParams = 'k';

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};

}  // namespace

const char* kindOf(const WorkKey& key) {
  return std::visit(Overloaded{
                        [](const ClaimKey&) { return "claim"; },
                        [](const DeviceKey&) { return "device"; },
                        [](const PodKey&) { return "pod"; },
                        [](const NudgeKey& k) { return k.followUp ? "renudge" : "nudge"; },
                        [](const ClassParamsKey&) { return "classparams"; },
                    },
                    key);
}

std::string KeyQueue::encode(const WorkKey& key) {
  return std::visit(Overloaded{
                        [](const ClaimKey& k) { return kClaim + k.key; },
                        [](const DeviceKey& k) { return kDevice + k.name; },
                        [](const PodKey& k) { return kPod + k.key; },
                        [](const NudgeKey& k) {
                          const bool claim = k.target.kind == NudgeTarget::Kind::kClaim;
                          const char tag = k.followUp ? (claim ? kClaimFollowUp : kResourceFollowUp)
                                                      : (claim ? kClaimNudge : kResourceNudge);
                          return tag + k.target.name;
                        },
                        [](const ClassParamsKey&) { return std::string(1, kClassParams); },
                    },
                    key);
}

std::optional<WorkKey> KeyQueue::decode(const std::string& text) {
  if (text.empty()) {
    return std::nullopt;
  }
  std::string name = text.substr(1);
  switch (text[0]) {
    case kClaim:
      return ClaimKey{std::move(name)};
    case kDevice:
      return DeviceKey{std::move(name)};
    case kPod:
      return PodKey{std::move(name)};
    case kResourceNudge:
      return NudgeKey{NudgeTarget::resource(std::move(name)), false};
    case kClaimNudge:
      return NudgeKey{NudgeTarget::claim(std::move(name)), false};
    case kResourceFollowUp:
      return NudgeKey{NudgeTarget::resource(std::move(name)), true};
    case kClaimFollowUp:
      return NudgeKey{NudgeTarget::claim(std::move(name)), true};
    case kClassParams:
      return name.empty() ? std::optional<WorkKey>(ClassParamsKey{}) : std::nullopt;
    default:
      return std::nullopt;
  }
}

std::optional<WorkKey> KeyQueue::get() {
  // Only this class adds keys, so every key decodes; the loop guards against nothing else.
  while (auto text = queue_.get()) {
    auto key = decode(*text);
    if (key) {
      return key;
    }
    queue_.done(*text);
  }
  return std::nullopt;
}

}  // namespace ker
