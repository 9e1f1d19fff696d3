// libFuzzer target for the inventory reader: whatever bytes an inventory file holds, it
// gives an inventory or throws edgeprobe::Error (bad input), within its bounds on nesting
// and on what aliases expand to, and never crashes, reads out of bounds or leaks (ASan).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "lab/inventory.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto inv = edgeprobe::lab::parse_inventory(text, "fuzz.yml");
    for (const auto& d : inv.devices) {
      // What the reader promises of every device it returns.
      if (d.name.empty() || d.name.front() == '-' || d.host.starts_with('-') || d.serial.starts_with('-') ||
          d.user.starts_with('-') || d.workdir.starts_with('-'))
        __builtin_trap();
      (void)edgeprobe::lab::to_json(d).dump();
    }
  } catch (const edgeprobe::Error&) {
    // a refused inventory: one line for the user
  }
  return 0;
}
