#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

// The KV-transfer wire format (docs/disaggregation.md): every message is one frame, a
// fixed 24-byte header then the payload. Control payloads are JSON; the sequence state is
// one binary frame. Nothing is allocated before a header's length passed its bound.
namespace edgeprobe::kv {

inline constexpr uint32_t kMagic = 0x564b5045;  // "EPKV" as little-endian bytes
inline constexpr uint16_t kProtocolVersion = 2;  // 2: the handshake MACs cover the fingerprints
inline constexpr size_t kHeaderBytes = 24;

enum class FrameType : uint16_t {
  kWelcome = 1,    // server -> client on accept: {"protocol", "nonce"}
  kAuth = 2,       // client: {"protocol", "mac", "nonce", "fingerprint"}
  kReady = 3,      // server: {"mac", "fingerprint"}
  kPrefill = 4,    // client: {"start", "tokens"}
  kPrefilled = 5,  // server: {"n_past", "argmax", "prefill_ms", "serialize_ms", "state_bytes"}
  kState = 6,      // server: the sequence state, binary
  kError = 7,      // either side: {"message"}; the connection ends after it
};
const char* frame_type_name(FrameType type);

// Bounds on what a peer may announce: control frames are small; a state frame is bounded
// by the configured maximum (the decode node's memory, not the peer's word).
struct Limits {
  uint64_t max_control_bytes = 1 << 20;
  uint64_t max_state_bytes = 4ull << 30;
  uint64_t max_for(FrameType type) const {
    return type == FrameType::kState ? max_state_bytes : max_control_bytes;
  }
};

struct FrameHeader {
  FrameType type = FrameType::kError;
  uint64_t length = 0;
  uint32_t checksum = 0;  // CRC-32 of the payload
};

struct Frame {
  FrameType type = FrameType::kError;
  std::vector<uint8_t> payload;
  nlohmann::json json() const;  // the payload as a JSON object; throws for anything else
};

// CRC-32 (zlib's polynomial); `crc` continues a running checksum.
uint32_t checksum(const uint8_t* data, size_t size, uint32_t crc = 0);

std::array<uint8_t, kHeaderBytes> encode_header(const FrameHeader& header);
// Checks magic, version, type and the length bound; throws Error(kEnvironment) naming the
// problem ("frame claims 100000000000 bytes, more than the 1048576 allowed").
FrameHeader decode_header(const uint8_t* bytes, const Limits& limits);
// Throws when the payload's checksum differs from the header's.
void verify_payload(const FrameHeader& header, const uint8_t* payload);
// The same check with the payload's checksum already computed.
void verify_checksum(const FrameHeader& header, uint32_t actual);

std::vector<uint8_t> encode_frame(FrameType type, const std::vector<uint8_t>& payload);
std::vector<uint8_t> encode_json_frame(FrameType type, const nlohmann::json& body);

// Incremental parser: bytes in as they arrive, whole checked frames out. The same code
// reads the socket (frame_io) and is what the fuzz target drives. After a throw the
// parser is spent: a peer that sent one bad frame is not read further.
class FrameParser {
 public:
  explicit FrameParser(Limits limits = {}) : limits_(limits) {}
  void feed(const uint8_t* data, size_t size);
  std::optional<Frame> next();  // throws Error(kEnvironment) for a bad frame
  size_t buffered() const { return buffer_.size(); }

 private:
  Limits limits_;
  std::vector<uint8_t> buffer_;
};

}  // namespace edgeprobe::kv
