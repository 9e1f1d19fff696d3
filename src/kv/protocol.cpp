#include "kv/protocol.h"

#include <zlib.h>

#include <cstring>

#include "core/error.h"

namespace edgeprobe::kv {
namespace {

void put_le(uint8_t* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}

uint64_t get_le(const uint8_t* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= static_cast<uint64_t>(in[i]) << (8 * i);
  return value;
}

bool known_type(uint16_t type) {
  return type >= static_cast<uint16_t>(FrameType::kWelcome) &&
         type <= static_cast<uint16_t>(FrameType::kError);
}

}  // namespace

const char* frame_type_name(FrameType type) {
  switch (type) {
    case FrameType::kWelcome:
      return "welcome";
    case FrameType::kAuth:
      return "auth";
    case FrameType::kReady:
      return "ready";
    case FrameType::kPrefill:
      return "prefill";
    case FrameType::kPrefilled:
      return "prefilled";
    case FrameType::kState:
      return "state";
    case FrameType::kError:
      return "error";
  }
  return "unknown";
}

nlohmann::json Frame::json() const {
  auto j = nlohmann::json::parse(payload.begin(), payload.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw_environment("kv peer sent a {} frame whose payload is not a JSON object", frame_type_name(type));
  return j;
}

uint32_t checksum(const uint8_t* data, size_t size, uint32_t crc) {
  // zlib takes a uInt length: feed it in pieces of at most 1 GiB.
  while (size > 0) {
    const size_t n = std::min<size_t>(size, 1u << 30);
    crc = static_cast<uint32_t>(crc32(crc, data, static_cast<uInt>(n)));
    data += n;
    size -= n;
  }
  return crc;
}

// Layout: magic u32, version u16, type u16, length u64, checksum u32, reserved u32 (0).
std::array<uint8_t, kHeaderBytes> encode_header(const FrameHeader& h) {
  std::array<uint8_t, kHeaderBytes> out{};
  put_le(out.data(), kMagic, 4);
  put_le(out.data() + 4, kProtocolVersion, 2);
  put_le(out.data() + 6, static_cast<uint16_t>(h.type), 2);
  put_le(out.data() + 8, h.length, 8);
  put_le(out.data() + 16, h.checksum, 4);
  return out;
}

FrameHeader decode_header(const uint8_t* bytes, const Limits& limits) {
  if (get_le(bytes, 4) != kMagic)
    throw_environment("kv peer sent bytes that are not an edgeprobe kv frame (bad magic)");
  const auto version = static_cast<uint16_t>(get_le(bytes + 4, 2));
  if (version != kProtocolVersion)
    throw_environment("kv peer speaks protocol version {}, this edgeprobe speaks {}", version,
                      kProtocolVersion);
  const auto type = static_cast<uint16_t>(get_le(bytes + 6, 2));
  if (!known_type(type)) throw_environment("kv peer sent an unknown frame type {}", type);
  if (get_le(bytes + 20, 4) != 0) throw_environment("kv peer sent a frame header with reserved bits set");
  FrameHeader h;
  h.type = static_cast<FrameType>(type);
  h.length = get_le(bytes + 8, 8);
  h.checksum = static_cast<uint32_t>(get_le(bytes + 16, 4));
  if (h.length > limits.max_for(h.type))
    throw_environment("kv peer's {} frame claims {} bytes, more than the {} allowed", frame_type_name(h.type),
                      h.length, limits.max_for(h.type));
  return h;
}

void verify_payload(const FrameHeader& header, const uint8_t* payload) {
  verify_checksum(header, checksum(payload, header.length));
}

void verify_checksum(const FrameHeader& header, uint32_t actual) {
  if (actual != header.checksum)
    throw_environment("kv peer's {} frame of {} bytes fails its checksum (0x{:08x}, header says 0x{:08x})",
                      frame_type_name(header.type), header.length, actual, header.checksum);
}

std::vector<uint8_t> encode_frame(FrameType type, const std::vector<uint8_t>& payload) {
  const auto header = encode_header({type, payload.size(), checksum(payload.data(), payload.size())});
  std::vector<uint8_t> out(kHeaderBytes + payload.size());
  std::memcpy(out.data(), header.data(), kHeaderBytes);
  if (!payload.empty()) std::memcpy(out.data() + kHeaderBytes, payload.data(), payload.size());
  return out;
}

std::vector<uint8_t> encode_json_frame(FrameType type, const nlohmann::json& body) {
  const std::string text = body.dump();
  return encode_frame(type, std::vector<uint8_t>(text.begin(), text.end()));
}

void FrameParser::feed(const uint8_t* data, size_t size) { buffer_.insert(buffer_.end(), data, data + size); }

std::optional<Frame> FrameParser::next() {
  if (buffer_.size() < kHeaderBytes) return std::nullopt;
  const FrameHeader h = decode_header(buffer_.data(), limits_);
  if (buffer_.size() - kHeaderBytes < h.length) return std::nullopt;
  verify_payload(h, buffer_.data() + kHeaderBytes);
  Frame f;
  f.type = h.type;
  const auto begin = buffer_.begin() + static_cast<std::ptrdiff_t>(kHeaderBytes);
  const auto end = begin + static_cast<std::ptrdiff_t>(h.length);
  f.payload.assign(begin, end);
  buffer_.erase(buffer_.begin(), end);
  return f;
}

}  // namespace edgeprobe::kv
