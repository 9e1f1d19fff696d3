#include "engine/engine.h"

#include <algorithm>
#include <cctype>

#include "core/error.h"

namespace edgeprobe::engine {

nlohmann::json Capabilities::to_json() const {
  return {{"kv_state", kv_state},
          {"context_shift", context_shift},
          {"cpu_placement", cpu_placement},
          {"per_token_timing", per_token_timing}};
}

std::string plain_chat_text(const std::vector<ChatMessage>& messages, bool add_assistant) {
  std::string text;
  for (const auto& m : messages) text += m.role + ": " + m.content + "\n";
  if (add_assistant) text += "assistant: ";
  return text;
}

std::vector<bool> parse_cpu_mask(const std::string& text) {
  std::string hex = text;
  if (hex.starts_with("0x") || hex.starts_with("0X")) hex = hex.substr(2);
  if (hex.empty() || hex.size() > kMaxCpus / 4)
    throw_bad_input("invalid CPU mask '{}': expected a hex number such as 0x3", text);
  std::vector<bool> mask(hex.size() * 4, false);
  for (size_t i = 0; i < hex.size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(hex[hex.size() - 1 - i])));
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else throw_bad_input("invalid CPU mask '{}': '{}' is not a hex digit", text, c);
    for (int b = 0; b < 4; ++b) mask[i * 4 + b] = (v >> b) & 1;
  }
  if (std::none_of(mask.begin(), mask.end(), [](bool b) { return b; }))
    throw_bad_input("CPU mask '{}' selects no CPU", text);
  return mask;
}

}  // namespace edgeprobe::engine
