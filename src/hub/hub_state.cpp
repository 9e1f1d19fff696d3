#include "hub/hub_state.h"

#include <fmt/format.h>

#include "core/error.h"
#include "hub/submission.h"

namespace edgeprobe::hub {

HubState::HubState(std::unique_ptr<store::Store> store, std::string token_file)
    : store_(std::move(store)), tokens_(std::move(token_file)) {}

void HubState::index_run(int64_t id, const std::function<void(const std::string&)>& log) {
  try {
    const app::StoredRun run = app::load_stored_run(*store_, id);
    RunRow row = row_of(run, submission_facts(run.record));
    const nlohmann::json facts = submission_facts(run.record);
    std::string key = facts.is_object() ? facts.value("key", "") : "";
    if (key.empty() && run.content) key = run_key(*run.content);
    std::unique_lock lock(index_mutex_);
    if (!key.empty()) keys_.try_emplace(key, id);
    if (const auto it = position_.find(id); it != position_.end()) {
      rows_[it->second] = std::move(row);
    } else {
      position_[id] = rows_.size();
      rows_.push_back(std::move(row));
    }
  } catch (const Error& e) {
    std::unique_lock lock(index_mutex_);
    if (unreadable_.insert(id).second) log(fmt::format("run {}: left out of the hub: {}", id, e.what()));
  }
}

void HubState::reflag() {
  // Worked out while pages still read the index (only writers hold store_mutex_, so the
  // rows cannot change meanwhile), then swapped in under the writer's lock.
  std::vector<std::vector<Flag>> flags;
  {
    std::shared_lock lock(index_mutex_);
    flags = compute_flags(rows_);
  }
  std::unique_lock lock(index_mutex_);
  for (size_t i = 0; i < rows_.size() && i < flags.size(); ++i) rows_[i].flags = std::move(flags[i]);
}

size_t HubState::refresh(const std::function<void(const std::string&)>& log) {
  std::lock_guard store_lock(store_mutex_);
  std::vector<int64_t> todo;
  {
    std::shared_lock lock(index_mutex_);
    for (const store::RunSummary& s : store_->list_runs()) {
      const auto it = position_.find(s.id);
      if (unreadable_.contains(s.id)) continue;
      if (it == position_.end() || rows_[it->second].status != s.status) todo.push_back(s.id);
    }
  }
  for (int64_t id : todo) index_run(id, log);
  if (!todo.empty()) reflag();
  return todo.size();
}

std::vector<Flag> HubState::flags(int64_t run) const {
  std::shared_lock lock(index_mutex_);
  const auto it = position_.find(run);
  return it == position_.end() ? std::vector<Flag>{} : rows_[it->second].flags;
}

std::optional<RunRow> HubState::row(int64_t run) const {
  std::shared_lock lock(index_mutex_);
  const auto it = position_.find(run);
  if (it == position_.end()) return std::nullopt;
  return rows_[it->second];
}

nlohmann::json HubState::document(int64_t run) const {
  std::lock_guard lock(store_mutex_);
  return app::load_stored_run(*store_, run).document();
}

std::pair<int64_t, bool> HubState::submit(const Checked& checked, const nlohmann::json& facts) {
  std::lock_guard submit_lock(submit_mutex_);  // the duplicate check and the insert are one step
  {
    std::shared_lock lock(index_mutex_);
    if (const auto it = keys_.find(checked.key); it != keys_.end()) return {it->second, true};
  }
  std::lock_guard store_lock(store_mutex_);
  const int64_t id = record_submission(*store_, checked, facts);
  index_run(id, [](const std::string&) {});
  reflag();
  return {id, false};
}

}  // namespace edgeprobe::hub
