#pragma once
// What the hub's handlers share: the store (one connection, used by one request at a
// time), the in-memory index of its runs, the token book.
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "hub/index.h"
#include "hub/tokens.h"
#include "store/store.h"

namespace edgeprobe::hub {

class HubState {
 public:
  HubState(std::unique_ptr<store::Store> store, std::string token_file);

  // Loads runs the index does not hold yet, and again those still running.
  // Returns how many rows changed; a run that cannot be read is skipped with a line.
  size_t refresh(const std::function<void(const std::string&)>& log);

  // `read` sees every row under a shared lock: pages query it in place (no copy of
  // 10^5 rows per request), and submissions wait only for the readers in flight.
  template <typename F>
  auto with_rows(F&& read) const {
    std::shared_lock lock(index_mutex_);
    return read(rows_);
  }
  bool has(int64_t run) const {
    std::shared_lock lock(index_mutex_);
    return position_.contains(run);
  }
  std::vector<Flag> flags(int64_t run) const;
  std::optional<RunRow> row(int64_t run) const;
  nlohmann::json document(int64_t run) const;  // throws kBadInput for an unknown run

  // Records a checked submission unless its run is already here. {run id, duplicate?}.
  std::pair<int64_t, bool> submit(const struct Checked& checked, const nlohmann::json& facts);

  TokenBook& tokens() { return tokens_; }
  std::string location() const { return store_->location(); }

 private:
  void index_run(int64_t id, const std::function<void(const std::string&)>& log);  // with store_mutex_ held
  void reflag();                                                                   // likewise

  mutable std::mutex store_mutex_;
  std::unique_ptr<store::Store> store_;
  mutable std::shared_mutex index_mutex_;
  std::vector<RunRow> rows_;
  std::unordered_map<int64_t, size_t> position_;   // run id -> rows_ index
  std::unordered_map<std::string, int64_t> keys_;  // run_key -> run id
  std::set<int64_t> unreadable_;                   // said once, not read again
  std::mutex submit_mutex_;
  TokenBook tokens_;
};

}  // namespace edgeprobe::hub
