#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

namespace edgeprobe::probe {

// Sequential read throughput of the model file: the ceiling for load time. Cold means the
// file's pages were dropped from the page cache first; when that cannot be done or
// verified, cold is "unavailable: <why>" rather than a warm figure in disguise.
struct StorageOptions {
  uint64_t max_bytes = 1ull << 30;  // read at most this much of the file (a prefix)
  uint64_t chunk_bytes = 4ull << 20;
  bool allow_drop_caches = true;    // root only: /proc/sys/vm/drop_caches when fadvise did not evict
};

struct StorageResult {
  std::string path;
  uint64_t file_bytes = 0;
  int64_t file_mtime_s = 0;
  uint64_t bytes_read = 0;
  double cold_mb_per_s = 0;   // MB = 1e6 bytes; 0 when unavailable
  std::string cold_status;    // "measured (posix_fadvise DONTNEED, 0.0% resident before)" or "unavailable: ..."
  double warm_mb_per_s = 0;
  std::string warm_status;
  bool cold_available() const { return cold_mb_per_s > 0; }
};

// Throws Error(kBadInput) when the file cannot be opened.
StorageResult measure_storage(const std::string& path, const StorageOptions& options = {});

// Which pages of a file are in the page cache (mincore(2)); empty when unknown.
std::vector<bool> page_residency(const std::string& path);
// Drops the file's pages that are not set in `keep` (POSIX_FADV_DONTNEED per run of
// pages): undoes what reading the file brought into the cache, and nothing else.
void evict_pages_not_in(const std::string& path, const std::vector<bool>& keep);

// Share of the first `bytes` of the file that is resident in the page cache (mincore), or
// a negative value when it cannot be told.
double resident_fraction(const std::string& path, uint64_t bytes);

nlohmann::json to_json(const StorageResult& result);
StorageResult storage_from_json(const nlohmann::json& j);

}  // namespace edgeprobe::probe
